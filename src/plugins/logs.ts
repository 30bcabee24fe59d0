/**
 * `jupyter-air:logs`: a job run's logs in a main-area tab (src/logs/), one tab per job run,
 * opened (or found and pointed at another node or attempt) by `jupyter-air:open-logs` and
 * restored with the layout. The Logs view's code loads with the first tab.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import { ITranslator } from '@jupyterlab/translation';

import { CommandIDs, intArg, stringArg } from '../commands';
import { loadTranslation } from '../common/translation';
import { logsIcon } from '../icons';
import type { LogsView } from '../logs/view';

/** The attempt filter of a command's `attempt` (0 or none: the latest). */
function attemptFilter(attempt: number | undefined): number | null {
  return attempt !== undefined && attempt > 0 ? attempt : null;
}

export const logsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-air:logs',
  description: "A job run's logs in a main-area tab: search, filters, follow.",
  autoStart: true,
  optional: [ITranslator, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    translator: ITranslator | null,
    restorer: ILayoutRestorer | null
  ) => {
    const trans = loadTranslation(translator);
    const tracker = new WidgetTracker<MainAreaWidget<LogsView>>({
      namespace: 'jupyter-air-logs'
    });

    /** A new tab for a job run's logs (the Logs view loads with the first one). */
    const create = async (
      id: string,
      node: number,
      attempt: number | null
    ): Promise<MainAreaWidget<LogsView>> => {
      const [{ LogsModel }, { LogsView }] = await Promise.all([
        import('../logs/model'),
        import('../logs/view')
      ]);
      const model = new LogsModel({ jobId: id, filters: { node, attempt } });
      const content = new LogsView({ model, translator });
      content.title.icon = logsIcon;
      const widget = new MainAreaWidget({ content });
      widget.id = `jupyter-air-logs-${id}`;
      widget.title.icon = logsIcon;
      widget.title.closable = true;
      widget.disposed.connect(() => model.dispose());
      app.shell.add(widget, 'main');
      void tracker.add(widget);
      return widget;
    };

    app.commands.addCommand(CommandIDs.openLogs, {
      label: trans.__('Open Logs'),
      caption: trans.__("Read a job run's logs"),
      icon: logsIcon,
      describedBy: {
        args: {
          type: 'object',
          properties: {
            id: { type: 'string', description: trans.__('The job run') },
            node: {
              type: 'integer',
              description: trans.__('The node (default 0)')
            },
            attempt: {
              type: 'integer',
              description: trans.__('The attempt (default: the latest)')
            }
          }
        }
      },
      execute: async args => {
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
            change.attempt = attemptFilter(attempt);
          }
          widget.content.model.setFilters(change);
        } else {
          widget = await create(id, node ?? 0, attemptFilter(attempt));
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
