/**
 * `jupyter-air:experiments`: the "Experiments" panel in the right sidebar (src/experiments/),
 * following the active notebook (and its renames), and its command
 * `jupyter-air:open-experiments` (optionally on a run: its experiment, the run highlighted).
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ITranslator } from '@jupyterlab/translation';
import { IDisposable } from '@lumino/disposable';

import { CommandIDs, stringArg } from '../commands';
import { loadTranslation } from '../common/translation';
import { ExperimentsModel } from '../experiments/model';
import { ExperimentsPanel } from '../experiments/panel';
import { experimentsIcon } from '../icons';
import { IMlflowStatusStore } from '../tokens';
import { addCommand, addSidePanel } from './shell';

/** The id of the Experiment panel (stable: the layout restorer and the UI tests use it). */
export const EXPERIMENTS_PANEL_ID = 'jupyter-air-experiments';

/** Tell `model` the active notebook's path, now and whenever it (or its path) changes. */
function followActiveNotebook(
  notebooks: INotebookTracker,
  model: ExperimentsModel
): IDisposable {
  let watched: NotebookPanel | null = null;
  const follow = () => {
    model.setNotebook(notebooks.currentWidget?.context.path ?? null);
  };
  const unwatch = () => {
    if (watched && !watched.isDisposed) {
      watched.context.pathChanged.disconnect(follow);
    }
    watched = null;
  };
  const onCurrentChanged = () => {
    unwatch();
    watched = notebooks.currentWidget;
    watched?.context.pathChanged.connect(follow);
    follow();
  };
  notebooks.currentChanged.connect(onCurrentChanged);
  onCurrentChanged();
  let disposed = false;
  return {
    get isDisposed() {
      return disposed;
    },
    dispose() {
      if (!disposed) {
        disposed = true;
        notebooks.currentChanged.disconnect(onCurrentChanged);
        unwatch();
      }
    }
  };
}

export const experimentsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-air:experiments',
  description: "Experiments side panel: the active notebook's MLflow runs.",
  autoStart: true,
  requires: [IMlflowStatusStore],
  optional: [ITranslator, INotebookTracker, ICommandPalette, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    store: IMlflowStatusStore,
    translator: ITranslator | null,
    notebooks: INotebookTracker | null,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ) => {
    const trans = loadTranslation(translator);
    const model = new ExperimentsModel({ store });
    const panel = new ExperimentsPanel({
      model,
      commands: app.commands,
      translator
    });
    addSidePanel(app, restorer, panel, {
      id: EXPERIMENTS_PANEL_ID,
      icon: experimentsIcon,
      rank: 1010
    });
    const following = notebooks ? followActiveNotebook(notebooks, model) : null;
    panel.disposed.connect(() => {
      following?.dispose();
      model.dispose();
    });

    addCommand(app, palette, trans.__('MLflow'), CommandIDs.openExperiments, {
      label: trans.__('Open Experiments'),
      caption: trans.__(
        "Show the MLflow runs of the active notebook's experiment"
      ),
      icon: experimentsIcon,
      describedBy: {
        args: {
          type: 'object',
          properties: {
            experiment_id: {
              type: 'string',
              description: trans.__('Show this experiment')
            },
            run_id: {
              type: 'string',
              description: trans.__('Highlight this run')
            }
          }
        }
      },
      execute: args => {
        const experimentId = stringArg(args, 'experiment_id');
        const runId = stringArg(args, 'run_id');
        if (experimentId !== undefined || runId !== undefined) {
          model.focusRun({ experiment_id: experimentId, run_id: runId });
        }
        app.shell.activateById(panel.id);
      }
    });
  }
};
