/**
 * The Cancel button of a running call's live widget (jupyter_air/notebook/live_widget.py).
 *
 * The widget's view dispatches a `jupyter-air-live-cancel` DOM event with what to cancel; this
 * module does it the way the rest of JupyterLab would: a call of the kernel is stopped by
 * interrupting the kernel of the notebook the output is in (what Ctrl-C does: every rank
 * stopped, its run KILLED), a job run by asking the server to cancel it (as the Workloads panel
 * does). The widget's own comm could not carry the click: the kernel is busy running the call.
 */

/** The event the widget's view dispatches (bubbling) when Cancel is clicked. */
export const CANCEL_EVENT = 'jupyter-air-live-cancel';

/** What a widget asks to cancel. */
export interface ICancelRequest {
  action?: string;
  job_id?: string;
}

/** How a cancellation is done (the real ones, or test doubles). */
export interface ICancelActions {
  /** Interrupt the kernel of the notebook `node` is in; false if none was found. */
  interrupt(node: Element): Promise<boolean>;
  /** `POST air/api/workloads/{id}/cancel`. */
  cancelJob(id: string): Promise<unknown>;
}

/** Do what a widget's Cancel asks; false when the request is not one we know. */
export async function cancelFromWidget(
  request: ICancelRequest,
  node: Element,
  actions: ICancelActions
): Promise<boolean> {
  if (request.action === 'interrupt') {
    return actions.interrupt(node);
  }
  if (request.action === 'cancel-job' && typeof request.job_id === 'string') {
    await actions.cancelJob(request.job_id);
    return true;
  }
  return false;
}

/** Listen for Cancel clicks on `root` (the document); dispose with the returned function. */
export function listenForCancel(
  root: EventTarget,
  actions: ICancelActions
): () => void {
  const listener = (event: Event) => {
    const target = event.target;
    if (!(target instanceof Element)) {
      return;
    }
    const request = ((event as CustomEvent).detail ?? {}) as ICancelRequest;
    cancelFromWidget(request, target, actions).catch(reason =>
      console.warn('jupyter-air: cancel failed', reason)
    );
  };
  root.addEventListener(CANCEL_EVENT, listener);
  return () => root.removeEventListener(CANCEL_EVENT, listener);
}
