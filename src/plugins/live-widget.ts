/**
 * `jupyter-air:live-widget`: the Cancel button of running calls' live widgets
 * (src/live/cancel.ts).
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';

import { listenForCancel } from '../live/cancel';
import { cancelJob } from '../workloads/api';

export const liveWidgetPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-air:live-widget',
  description:
    "Cancels a running call from its live widget's Cancel button (interrupt, or job cancel).",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, notebooks: INotebookTracker) => {
    listenForCancel(document, {
      interrupt: async node => {
        const panel = notebooks.find(p => p.node.contains(node));
        const kernel = panel?.sessionContext.session?.kernel;
        if (!kernel) {
          return false;
        }
        await kernel.interrupt();
        return true;
      },
      cancelJob
    });
  }
};
