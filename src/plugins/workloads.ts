/**
 * `jupyter-air:workloads`: the "Workloads" panel (job runs and their pages) in the right sidebar
 * (src/workloads/), its command `jupyter-air:open-workloads`, and the job run named by
 * `?air-workload=<id>` in the page's URL (the link `air run` prints) opened at start.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { ITranslator } from '@jupyterlab/translation';

import { CommandIDs, stringArg } from '../commands';
import { loadTranslation } from '../common/translation';
import { workloadsIcon } from '../icons';
import { JobModel } from '../workloads/job-model';
import { WorkloadsModel } from '../workloads/model';
import { WorkloadsPanel } from '../workloads/panel';
import { SchedulesModel } from '../workloads/schedules-model';
import { workloadFromSearch } from '../workloads/url';
import { addCommand, addSidePanel } from './shell';

/** The id of the Workloads panel (stable: the layout restorer and the UI tests use it). */
export const WORKLOADS_PANEL_ID = 'jupyter-air-workloads';

export const workloadsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-air:workloads',
  description: 'Workloads side panel: job runs, their attempts, YAML and logs.',
  autoStart: true,
  optional: [ITranslator, ICommandPalette, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    translator: ITranslator | null,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ) => {
    const trans = loadTranslation(translator);
    const model = new WorkloadsModel();
    const jobModel = new JobModel();
    const schedulesModel = new SchedulesModel();
    const panel = new WorkloadsPanel({
      model,
      jobModel,
      schedulesModel,
      commands: app.commands,
      translator
    });
    addSidePanel(app, restorer, panel, {
      id: WORKLOADS_PANEL_ID,
      icon: workloadsIcon,
      rank: 1020
    });
    panel.disposed.connect(() => {
      model.dispose();
      jobModel.dispose();
      schedulesModel.dispose();
    });

    addCommand(app, palette, trans.__('Workloads'), CommandIDs.openWorkloads, {
      label: trans.__('Open Workloads'),
      caption: trans.__('Show the job runs (workloads) and their logs'),
      icon: workloadsIcon,
      describedBy: {
        args: {
          type: 'object',
          properties: {
            id: {
              type: 'string',
              description: trans.__("Open this job run's page")
            }
          }
        }
      },
      execute: args => {
        const id = stringArg(args, 'id');
        if (id !== undefined) {
          panel.openJob(id);
        }
        app.shell.activateById(panel.id);
      }
    });

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
