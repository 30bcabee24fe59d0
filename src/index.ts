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
 *
 * `jupyter-air:workloads` puts the "Workloads" panel (job runs and their pages) in the right
 * sidebar with its command `jupyter-air:open-workloads` (src/workloads/), and opens the job run
 * named by `?air-workload=<id>` in the page's URL; `jupyter-air:logs` opens a job run's logs in a
 * main-area tab, `jupyter-air:open-logs` (src/logs/).
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
import { experimentsIcon, gpuIcon, logsIcon, workloadsIcon } from './icons';
import { KernelExtensionLoader } from './kernel-extension';
import { createRunRendererFactory } from './mlflow/run-renderer';
import { MlflowStatusStore } from './mlflow/status';
import { MlflowOpener, MlflowView } from './mlflow/ui-tab';
import { LogsModel } from './logs/model';
import { LogsView } from './logs/view';
import { JobModel } from './workloads/job-model';
import { WorkloadsModel } from './workloads/model';
import { WorkloadsPanel } from './workloads/panel';
import { workloadFromSearch } from './workloads/url';

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

/** A non-negative integer argument of a command, `undefined` when absent or not one. */
function intArg(
  args: { [key: string]: unknown },
  name: string
): number | undefined {
  const value = args[name];
  const n = typeof value === 'string' && value ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 ? n : undefined;
}

/** The id of the Workloads panel (stable: the layout restorer and the UI tests use it). */
export const WORKLOADS_PANEL_ID = 'jupyter-air-workloads';

const workloadsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-air:workloads',
  description: 'Workloads side panel: job runs, their attempts, YAML and logs.',
  autoStart: true,
  optional: [ICommandPalette, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ) => {
    const model = new WorkloadsModel();
    const jobModel = new JobModel();
    const panel = new WorkloadsPanel({
      model,
      jobModel,
      commands: app.commands
    });
    addSidePanel(app, restorer, panel, {
      id: WORKLOADS_PANEL_ID,
      icon: workloadsIcon,
      caption: 'Workloads',
      rank: 1020
    });
    panel.disposed.connect(() => {
      model.dispose();
      jobModel.dispose();
    });

    addCommand(app, palette, 'Workloads', CommandIDs.openWorkloads, {
      label: 'Open Workloads',
      caption: 'Show the job runs (workloads) and their logs',
      icon: workloadsIcon,
      execute: args => {
        const id = stringArg(args, 'id');
        if (id !== undefined) {
          panel.openJob(id);
        }
        app.shell.activateById(panel.id);
      }
    });

    // `<base>lab?air-workload=<id>` (the link `air run` prints) opens that job run
    const fromUrl = workloadFromSearch(window.location.search);
    if (fromUrl !== null) {
      void app.restored
        .then(() =>
          app.commands.execute(CommandIDs.openWorkloads, { id: fromUrl })
        )
        .catch(reason =>
          console.warn(`jupyter-air: cannot open job run ${fromUrl}`, reason)
        );
    }
  }
};

const logsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-air:logs',
  description: "A job run's logs in a main-area tab: search, filters, follow.",
  autoStart: true,
  optional: [ILayoutRestorer],
  activate: (app: JupyterFrontEnd, restorer: ILayoutRestorer | null) => {
    const tracker = new WidgetTracker<MainAreaWidget<LogsView>>({
      namespace: 'jupyter-air-logs'
    });
    app.commands.addCommand(CommandIDs.openLogs, {
      label: 'Open Logs',
      caption: "Read a job run's logs",
      icon: logsIcon,
      execute: args => {
        const id = stringArg(args, 'id');
        if (id === undefined) {
          return app.commands.execute(CommandIDs.openWorkloads, {});
        }
        const node = intArg(args, 'node');
        const attempt = intArg(args, 'attempt');
        let widget = tracker.find(w => w.content.model.jobId === id);
        if (widget) {
          const change: { node?: number; attempt?: number | null } = {};
          if (node !== undefined) {
            change.node = node;
          }
          if (attempt !== undefined) {
            change.attempt = attempt > 0 ? attempt : null;
          }
          widget.content.model.setFilters(change);
        } else {
          const model = new LogsModel({
            jobId: id,
            filters: {
              node: node ?? 0,
              attempt: attempt !== undefined && attempt > 0 ? attempt : null
            }
          });
          const content = new LogsView({ model });
          content.title.icon = logsIcon;
          widget = new MainAreaWidget({ content });
          widget.id = `jupyter-air-logs-${id}`;
          widget.title.icon = logsIcon;
          widget.title.closable = true;
          widget.disposed.connect(() => model.dispose());
          app.shell.add(widget, 'main');
          void tracker.add(widget);
        }
        app.shell.activateById(widget.id);
        return widget;
      }
    });
    if (restorer) {
      void restorer.restore(tracker, {
        command: CommandIDs.openLogs,
        args: widget => {
          const filters = widget.content.model.filters;
          return {
            id: widget.content.model.jobId,
            node: filters.node,
            attempt: filters.attempt ?? 0
          };
        },
        name: widget => widget.content.model.jobId
      });
    }
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
  experimentsPlugin,
  workloadsPlugin,
  logsPlugin
];

export default plugins;
