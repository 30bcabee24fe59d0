/**
 * Statuses in words and colours, for MLflow runs (RUNNING, FINISHED, FAILED, KILLED, SCHEDULED)
 * and job runs (PENDING, QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED) alike: the run displays,
 * the Experiment and Workloads panels and the Logs view say and colour them the same way.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { h, setText } from './dom';
import { Wordings, wordingOf } from './text';

/** The statuses of MLflow runs and job runs in words. */
const STATUS_LABELS: Wordings = {
  RUNNING: trans => trans.__('Running'),
  FINISHED: trans => trans.__('Finished'),
  FAILED: trans => trans.__('Failed'),
  KILLED: trans => trans.__('Killed'),
  SCHEDULED: trans => trans.__('Scheduled'),
  PENDING: trans => trans.__('Pending'),
  QUEUED: trans => trans.__('Queued'),
  SUCCEEDED: trans => trans.__('Succeeded'),
  CANCELLED: trans => trans.__('Cancelled')
};

/** A status in words: `Running`, `Succeeded`; an unknown one as it came (capitalised). */
export function statusLabel(trans: TranslationBundle, status: unknown): string {
  const label = wordingOf(trans, STATUS_LABELS, status);
  if (label !== undefined) {
    return label;
  }
  if (typeof status !== 'string' || !status) {
    return trans.__('Unknown');
  }
  return status.charAt(0).toUpperCase() + status.slice(1).toLowerCase();
}

/**
 * The CSS modifier of a status badge: running in the brand colour, finished (succeeded) green,
 * failed red, killed (cancelled) orange, scheduled (pending) grey, queued (a job run waiting in
 * its cluster's queue) amber; `jp-air-status-other` else.
 */
export function statusClass(status: unknown): string {
  switch (status) {
    case 'RUNNING':
      return 'jp-air-status-running';
    case 'FINISHED':
    case 'SUCCEEDED':
      return 'jp-air-status-finished';
    case 'FAILED':
      return 'jp-air-status-failed';
    case 'KILLED':
    case 'CANCELLED':
      return 'jp-air-status-killed';
    case 'SCHEDULED':
    case 'PENDING':
      return 'jp-air-status-scheduled';
    case 'QUEUED':
      return 'jp-air-status-queued';
    default:
      return 'jp-air-status-other';
  }
}

/** A status in words, in a badge coloured by the status (`jp-air-status-badge`). */
export class StatusBadge {
  /** `className`: the badge's own class, kept beside the badge's and the status's. */
  constructor(className: string) {
    this._classes = `${className} jp-air-badge jp-air-status-badge`;
    this.node = h('span', this._classes);
  }

  readonly node: HTMLSpanElement;

  /** Show `status`: its words and its colour. */
  show(trans: TranslationBundle, status: unknown): void {
    setText(this.node, statusLabel(trans, status));
    const className = `${this._classes} ${statusClass(status)}`;
    if (this.node.className !== className) {
      this.node.className = className;
    }
  }

  private readonly _classes: string;
}
