/**
 * The confirmation asked before cancelling a job run (JupyterLab's dialog).
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';

import { jobName } from './format';
import { IJob } from './types';

/** Ask whether to cancel `job`; resolves `true` when the user confirms. */
export async function confirmCancelDialog(job: IJob): Promise<boolean> {
  const result = await showDialog({
    title: 'Cancel this job run?',
    body:
      `${jobName(job)} (job run ${job.id}) will be stopped: every node gets SIGTERM, then ` +
      'SIGKILL after a grace period. It ends CANCELLED and is not retried.',
    buttons: [
      Dialog.cancelButton({ label: 'Keep running' }),
      Dialog.warnButton({ label: 'Cancel job run' })
    ]
  });
  return result.button.accept;
}
