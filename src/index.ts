/**
 * The JupyterLab plugins of jupyter-air.
 *
 * `jupyter-air:gpu` puts the "GPU Resources" panel in the right sidebar, adds the
 * "Open GPU Resources" command (and palette entry), restores the panel with the layout, feeds it
 * user activity (so it stops polling when nobody is there) and theme changes (so charts stay
 * readable). Everything it shows lives in src/gpu/.
 *
 * `jupyter-air:mlflow` adds the "MLflow" tab and its command `jupyter-air:open-mlflow`
 * (src/mlflow/ui-tab.ts); `jupyter-air:mlflow-run-renderer` renders run displays in cell outputs
 * (src/mlflow/run-renderer.ts); `jupyter-air:experiments` puts the "Experiments" panel in the
 * right sidebar with its command `jupyter-air:open-experiments` (src/experiments/).
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  ICommandPalette,
  IThemeManager,
  MainAreaWidget,
  WidgetTracker
} from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { CommandIDs } from './commands';
import { ExperimentsModel } from './experiments/model';
import { ExperimentsPanel } from './experiments/panel';
import { watchActivity } from './gpu/activity';
import { GpuModel } from './gpu/model';
import { GpuPanel } from './gpu/panel';
import { PlotlyRenderer } from './gpu/plotly-renderer';
import { experimentsIcon, gpuIcon } from './icons';
import { KernelExtensionLoader } from './kernel-extension';
import { createRunRendererFactory } from './mlflow/run-renderer';
import { MlflowStatusStore } from './mlflow/status';
import { MlflowOpener, MlflowView } from './mlflow/ui-tab';

export { CommandIDs } from './commands';

/** Put a side panel in the right sidebar, restored with the layout. */
function addSidePanel(
  app: JupyterFrontEnd,
  restorer: ILayoutRestorer | null,
  panel: Widget,
  options: { id: string; icon: LabIcon; caption: string; rank: number }
): void {
  panel.id = options.id;
  panel.title.icon = options.icon;
  panel.title.caption = options.caption;
  app.shell.add(panel, 'right', { rank: options.rank });
  if (restorer) {
    restorer.add(panel, options.id);
  }
}

/** The options of a command (Lumino's `CommandRegistry.ICommandOptions`). */
type CommandOptions = Parameters<JupyterFrontEnd['commands']['addCommand']>[1];

/** Add a command, and its entry in the command palette (when there is one) under `category`. */
function addCommand(
  app: JupyterFrontEnd,
  palette: ICommandPalette | null,
  category: string,
  id: string,
  options: CommandOptions
): void {
  app.commands.addCommand(id, options);
  if (palette) {
    palette.addItem({ command: id, category });
  }
}

/** The id of the GPU Resources panel (stable: the layout restorer and the UI tests use it). */
export const GPU_PANEL_ID = 'jupyter-air-gpu';

const gpuPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-air:gpu',
  description: 'GPU Resources side panel: GPU and host telemetry of this node.',
  autoStart: true,
  optional: [ICommandPalette, ILayoutRestorer, IThemeManager],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    themeManager: IThemeManager | null
  ) => {
    const model = new GpuModel();
    const panel = new GpuPanel({
      model,
      renderer: new PlotlyRenderer(),
      openPath: path => {
        app.commands
          .execute('docmanager:open', { path })
          .catch(reason =>
            console.warn(`jupyter-air: cannot open ${path}`, reason)
          );
      }
    });
    addSidePanel(app, restorer, panel, {
      id: GPU_PANEL_ID,
      icon: gpuIcon,
      caption: 'GPU Resources',
      rank: 1000
    });

    const activity = watchActivity(document, () => model.noteActivity());
    if (themeManager) {
      themeManager.themeChanged.connect(() => panel.themeChanged());
    }
    panel.disposed.connect(() => {
      activity.dispose();
      model.dispose();
    });

    addCommand(app, palette, 'GPU Resources', CommandIDs.openGpuResources, {
      label: 'Open GPU Resources',
      caption: 'Show GPU utilisation, memory and processes of this node',
      icon: gpuIcon,
      execute: () => {
        app.shell.activateById(panel.id);
      }
    });
  }
};

/** The id of the Experiment panel (stable: the layout restorer and the UI tests use it). */
export const EXPERIMENTS_PANEL_ID = 'jupyter-air-experiments';

/** The MLflow status, shared by the MLflow tab's command and the Experiment panel. */
const mlflowStatus = new MlflowStatusStore();

/** A string argument of a command, `undefined` when absent or not a string. */
function stringArg(
  args: { [key: string]: unknown },
  name: string
): string | undefined {
  const value = args[name];
  return typeof value === 'string' && value ? value : undefined;
}

const mlflowPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-air:mlflow',
  description: 'The MLflow UI in a JupyterLab tab.',
  autoStart: true,
  optional: [ICommandPalette, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ) => {
    const tracker = new WidgetTracker<MainAreaWidget<MlflowView>>({
      namespace: 'jupyter-air-mlflow'
    });
    const opener = new MlflowOpener({
      store: mlflowStatus,
      addTab: widget => {
        app.shell.add(widget, 'main');
        void tracker.add(widget);
      },
      activate: widget => app.shell.activateById(widget.id)
    });

    addCommand(app, palette, 'MLflow', CommandIDs.openMlflow, {
      label: 'Open MLflow',
      caption: 'Open the MLflow tracking UI in a tab',
      icon: experimentsIcon,
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
    void app.restored.then(() => mlflowStatus.fetch()).catch(() => undefined);
  }
};

const runRendererPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-air:mlflow-run-renderer',
  description:
    'Renders MLflow run displays (application/vnd.jupyter-air.run+json).',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  activate: (app: JupyterFrontEnd, rendermime: IRenderMimeRegistry) => {
    rendermime.addFactory(createRunRendererFactory(app.commands), 10);
  }
};

const experimentsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-air:experiments',
  description: "Experiments side panel: the active notebook's MLflow runs.",
  autoStart: true,
  optional: [INotebookTracker, ICommandPalette, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker | null,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ) => {
    const model = new ExperimentsModel({ store: mlflowStatus });
    const panel = new ExperimentsPanel({ model, commands: app.commands });
    addSidePanel(app, restorer, panel, {
      id: EXPERIMENTS_PANEL_ID,
      icon: experimentsIcon,
      caption: 'Experiments',
      rank: 1010
    });

    if (notebooks) {
      // follow the active notebook, and its renames
      let watched: NotebookPanel | null = null;
      const follow = () => {
        model.setNotebook(notebooks.currentWidget?.context.path ?? null);
      };
      const onCurrentChanged = () => {
        if (watched && !watched.isDisposed) {
          watched.context.pathChanged.disconnect(follow);
        }
        watched = notebooks.currentWidget;
        if (watched) {
          watched.context.pathChanged.connect(follow);
        }
        follow();
      };
      notebooks.currentChanged.connect(onCurrentChanged);
      onCurrentChanged();
    }
    panel.disposed.connect(() => model.dispose());

    addCommand(app, palette, 'MLflow', CommandIDs.openExperiments, {
      label: 'Open Experiments',
      caption: "Show the MLflow runs of the active notebook's experiment",
      icon: experimentsIcon,
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

const kernelExtensionPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-air:kernel-extension',
  description:
    "Loads jupyter-air's IPython extension into Python notebook kernels (run links for mlflow.start_run()).",
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ISettingRegistry],
  activate: (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker,
    settings: ISettingRegistry | null
  ) => {
    let enabled = true;
    if (settings) {
      settings
        .load(kernelExtensionPlugin.id)
        .then(loaded => {
          const read = () => {
            enabled = loaded.get('autoLoad').composite !== false;
          };
          read();
          loaded.changed.connect(read);
        })
        .catch(reason =>
          console.warn('jupyter-air: kernel extension settings', reason)
        );
    }
    const loader = new KernelExtensionLoader(
      () => enabled,
      kernel => {
        const spec =
          app.serviceManager.kernelspecs.specs?.kernelspecs[kernel.name];
        return spec ? spec.language.toLowerCase() === 'python' : undefined;
      }
    );
    notebooks.widgetAdded.connect((_, panel) => {
      const watching = loader.watch(panel.sessionContext);
      panel.disposed.connect(() => watching.dispose());
    });
  }
};

const plugins: JupyterFrontEndPlugin<any>[] = [
  gpuPlugin,
  kernelExtensionPlugin,
  mlflowPlugin,
  runRendererPlugin,
  experimentsPlugin
];

export default plugins;
