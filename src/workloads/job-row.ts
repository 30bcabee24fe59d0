/**
 * One job run in the Workloads panel's list: name, status badge, experiment, compute, attempts,
 * submitted/started/ended times and duration (ticking while it runs), and while it is queued its
 * place in line (why it waits: the tooltip). Built once per job id and updated in place on each
 * poll; a click (or Enter) opens the job run's page.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { h, onEnterOrSpace, setAttr, setHidden, setText } from '../common/dom';
import { StatusBadge } from '../common/status';
import {
  attemptsText,
  computeText,
  elapsedMs,
  formatElapsed,
  formatTime,
  formatTimeFull,
  jobName,
  queueReason,
  queueShortText
} from './format';
import { IJob, isActiveStatus } from './types';

export class JobRow {
  constructor(
    trans: TranslationBundle,
    jobId: string,
    onOpen: (row: JobRow) => void
  ) {
    this._trans = trans;
    this.jobId = jobId;
    this.node = h('li', 'jp-air-wl-job');
    this.node.dataset.jobId = jobId;
    this.node.tabIndex = 0;
    this.node.setAttribute('role', 'button');

    const line1 = h('div', 'jp-air-wl-job-line');
    this._name = h('span', 'jp-air-wl-job-name');
    this._status = new StatusBadge('jp-air-wl-job-status');
    line1.append(this._name, this._status.node);

    const line2 = h('div', 'jp-air-wl-job-line jp-air-wl-job-meta');
    this._experiment = h('span', 'jp-air-wl-job-experiment');
    this._compute = h('span', 'jp-air-wl-job-compute');
    this._attempts = h('span', 'jp-air-wl-job-attempts');
    line2.append(this._experiment, this._compute, this._attempts);

    const line3 = h('div', 'jp-air-wl-job-line jp-air-wl-job-times');
    this._times = h('span', 'jp-air-wl-job-when');
    this._duration = h('span', 'jp-air-wl-job-duration');
    line3.append(this._times, this._duration);

    this._queue = h('div', 'jp-air-wl-job-queue');
    this._reason = h('div', 'jp-air-wl-job-reason');
    this.node.append(line1, line2, line3, this._queue, this._reason);

    this.node.addEventListener('click', () => onOpen(this));
    onEnterOrSpace(this.node, () => onOpen(this));
  }

  readonly jobId: string;
  readonly node: HTMLLIElement;

  /** The job run shown. */
  get job(): IJob | null {
    return this._job;
  }

  /** Show a job run's latest data. */
  update(job: IJob, now: number): void {
    const trans = this._trans;
    this._job = job;
    const status = String(job.status);
    this.node.dataset.status = status;
    const name = jobName(job);
    setText(this._name, name);
    const queued = status === 'QUEUED';
    const waits = queued ? queueReason(job.queue) : '';
    const open = trans.__('Open job run %1', job.id);
    setAttr(this.node, 'title', waits ? `${waits}\n${open}` : open);

    this._status.show(trans, status);

    const experiment = job.experiment_name || '';
    setText(this._experiment, experiment);
    setHidden(this._experiment, !experiment || experiment === name);
    setAttr(
      this._experiment,
      'title',
      experiment ? trans.__('Experiment %1', experiment) : ''
    );
    setText(this._compute, computeText(trans, job.compute));
    const attempts = Array.isArray(job.attempts) ? job.attempts.length : 0;
    setText(
      this._attempts,
      // queued: no attempt is starting yet
      attemptsText(trans, attempts, isActiveStatus(status) && !queued)
    );
    setAttr(
      this._attempts,
      'title',
      typeof job.max_retries === 'number'
        ? trans.__('%1 of at most %2', attempts, job.max_retries + 1)
        : ''
    );

    const parts = [trans.__('submitted %1', formatTime(job.submitted_at, now))];
    if (job.started_at !== null && job.started_at !== undefined) {
      parts.push(trans.__('started %1', formatTime(job.started_at, now)));
    }
    if (job.ended_at !== null && job.ended_at !== undefined) {
      parts.push(trans.__('ended %1', formatTime(job.ended_at, now)));
    }
    setText(this._times, parts.join(' · '));
    const full = [
      trans.__('Submitted %1', formatTimeFull(job.submitted_at)),
      job.started_at
        ? trans.__('Started %1', formatTimeFull(job.started_at))
        : '',
      job.ended_at ? trans.__('Ended %1', formatTimeFull(job.ended_at)) : ''
    ].filter(Boolean);
    setAttr(this._times, 'title', full.join('\n'));

    setText(this._queue, queued ? queueShortText(trans, job.queue) : '');
    setAttr(this._queue, 'title', waits);
    setHidden(this._queue, !queued);

    const reason = !isActiveStatus(status) && job.reason ? job.reason : '';
    setText(this._reason, reason);
    setHidden(this._reason, !reason);
    this.tick(now);
  }

  /** Update the duration (ticks while running). */
  tick(now: number): void {
    const job = this._job;
    if (!job) {
      return;
    }
    const known = elapsedMs(job, now) !== null;
    setText(this._duration, known ? formatElapsed(this._trans, job, now) : '');
    setHidden(this._duration, !known);
  }

  private readonly _trans: TranslationBundle;
  private readonly _name: HTMLSpanElement;
  private readonly _status: StatusBadge;
  private readonly _experiment: HTMLSpanElement;
  private readonly _compute: HTMLSpanElement;
  private readonly _attempts: HTMLSpanElement;
  private readonly _times: HTMLSpanElement;
  private readonly _duration: HTMLSpanElement;
  private readonly _queue: HTMLDivElement;
  private readonly _reason: HTMLDivElement;
  private _job: IJob | null = null;
}
