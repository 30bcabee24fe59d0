/**
 * The confirmation asked before cancelling a job run (JupyterLab's dialog).
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';

import { jobName } from './format';
import { IJob } from './types';

/** Ask whether to cancel `job`; resolves `true` when the user confirms. */
export async function confirmCancelDialog(
  trans: TranslationBundle,
  job: IJob
): Promise<boolean> {
  // queued: nothing runs yet, it only leaves its cluster's queue
  const queued = job.status === 'QUEUED';
  const result = await showDialog({
    title: trans.__('Cancel this job run?'),
    body: queued
      ? trans.__(
          "%1 (job run %2) will leave its cluster's queue without running. It ends CANCELLED and is not retried.",
          jobName(job),
          job.id
        )
      : trans.__(
          '%1 (job run %2) will be stopped: every node gets SIGTERM, then SIGKILL after a grace period. It ends CANCELLED and is not retried.',
          jobName(job),
          job.id
        ),
    buttons: [
      Dialog.cancelButton({
        label: queued ? trans.__('Keep waiting') : trans.__('Keep running')
      }),
      Dialog.warnButton({ label: trans.__('Cancel job run') })
    ]
  });
  return result.button.accept;
}
