/**
 * `jupyter-air:mlflow`: the "MLflow" main-area tab (src/mlflow/ui-view.ts) and its command
 * `jupyter-air:open-mlflow`, restored with the layout (without popping up browser tabs).
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  ICommandPalette,
  MainAreaWidget,
  WidgetTracker
} from '@jupyterlab/apputils';
import { ITranslator } from '@jupyterlab/translation';

import { CommandIDs, stringArg } from '../commands';
import { loadTranslation } from '../common/translation';
import { experimentsIcon } from '../icons';
import { MlflowOpener } from '../mlflow/ui-opener';
import { MlflowView } from '../mlflow/ui-view';
import { IMlflowStatusStore } from '../tokens';
import { addCommand } from './shell';

export const mlflowTabPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-air:mlflow',
  description: 'The MLflow UI in a JupyterLab tab.',
  autoStart: true,
  requires: [IMlflowStatusStore],
  optional: [ITranslator, ICommandPalette, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    store: IMlflowStatusStore,
    translator: ITranslator | null,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ) => {
    const trans = loadTranslation(translator);
    const tracker = new WidgetTracker<MainAreaWidget<MlflowView>>({
      namespace: 'jupyter-air-mlflow'
    });
    const opener = new MlflowOpener({
      store,
      translator,
      addTab: widget => {
        app.shell.add(widget, 'main');
        void tracker.add(widget);
      },
      activate: widget => app.shell.activateById(widget.id)
    });

    addCommand(app, palette, trans.__('MLflow'), CommandIDs.openMlflow, {
      label: trans.__('Open MLflow'),
      caption: trans.__('Open the MLflow tracking UI in a tab'),
      icon: experimentsIcon,
      describedBy: {
        args: {
          type: 'object',
          properties: {
            path: {
              type: 'string',
              description: trans.__(
                'A page of the MLflow UI, as its fragment (#/experiments/1/runs/abc)'
              )
            },
            restore: {
              type: 'boolean',
              description: trans.__(
                'Restoring the layout: never open a browser tab'
              )
            }
          }
        }
      },
      execute: args =>
        opener.open(stringArg(args, 'path') ?? null, {
          // restoring the layout must not pop up browser tabs
          allowWindow: args.restore !== true
        })
    });
    if (restorer) {
      void restorer.restore(tracker, {
        command: CommandIDs.openMlflow,
        args: () => ({ restore: true }),
        name: () => 'mlflow'
      });
    }
    // know early where the UI is, so the command can open a browser tab within the click
    void app.restored.then(() => store.fetch()).catch(() => undefined);
  }
};
