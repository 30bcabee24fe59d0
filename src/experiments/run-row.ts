/**
 * One run in the Experiment panel: name (a link to the run in MLflow), status badge, start time,
 * duration and a few latest metrics, with its child runs nested below. Built once per run id and
 * updated in place on each poll.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import {
  h,
  isNewTabClick,
  newTabLink,
  onEnterOrSpace,
  setAttr,
  setHidden,
  setText
} from '../common/dom';
import { statusClass, statusLabel } from '../common/status';
import { num } from '../common/text';
import {
  formatFullTime,
  formatMetric,
  formatRunDuration,
  formatStartTime,
  runDurationMs
} from '../mlflow/format';
import { safeFragment, uiLink } from '../mlflow/links';
import { IRun } from '../mlflow/types';

/** At most this many metrics per run. */
export const MAX_METRICS = 4;

/** The tag that names the workload job run a run is an attempt of. */
export const JOB_ID_TAG = 'jupyter_air.workload.job_id';

/** The job run of a run, `null` when it is not a workload's attempt. */
export function runJobId(run: IRun | null | undefined): string | null {
  if (typeof run?.job_id === 'string' && run.job_id) {
    return run.job_id;
  }
  const tags = run?.tags && typeof run.tags === 'object' ? run.tags : {};
  const value = tags[JOB_ID_TAG];
  return typeof value === 'string' && value ? value : null;
}

export class RunRow {
  constructor(
    trans: TranslationBundle,
    runId: string,
    onOpen: (row: RunRow) => void,
    onOpenWorkload?: (jobId: string) => void
  ) {
    this._trans = trans;
    this.runId = runId;
    this.node = h('li', 'jp-air-exp-run');
    this.node.dataset.runId = runId;

    this._row = h('div', 'jp-air-exp-run-row');
    this._row.tabIndex = 0;
    this._row.setAttribute('role', 'button');

    const line1 = h('div', 'jp-air-exp-run-line');
    this._name = newTabLink('jp-air-exp-run-name');
    this._status = h(
      'span',
      'jp-air-exp-run-status jp-air-badge jp-air-status-badge'
    );
    this._workload = h(
      'button',
      'jp-air-exp-run-workload',
      trans.__('workload')
    );
    this._workload.type = 'button';
    this._workload.hidden = true;
    this._workload.addEventListener('click', event => {
      event.stopPropagation(); // not the run
      const jobId = runJobId(this._run);
      if (jobId && onOpenWorkload) {
        onOpenWorkload(jobId);
      }
    });
    // Enter/Space activate the button, not the row
    this._workload.addEventListener('keydown', event =>
      event.stopPropagation()
    );
    line1.append(this._name, this._status, this._workload);

    const line2 = h('div', 'jp-air-exp-run-line jp-air-exp-run-times');
    this._start = h('span', 'jp-air-exp-run-start');
    this._duration = h('span', 'jp-air-exp-run-duration');
    line2.append(this._start, this._duration);

    this._metrics = h('div', 'jp-air-exp-run-metrics');
    this._row.append(line1, line2, this._metrics);

    this.children = h('ul', 'jp-air-exp-run-children');
    this.node.append(this._row, this.children);

    this._name.addEventListener('click', event => {
      if (isNewTabClick(event)) {
        event.stopPropagation(); // the browser opens the href; the row does nothing
        return;
      }
      event.preventDefault();
    });
    this._row.addEventListener('click', event => {
      if (!isNewTabClick(event)) {
        onOpen(this);
      }
    });
    onEnterOrSpace(this._row, () => onOpen(this));
  }

  /** The run's id. */
  readonly runId: string;
  /** The `<li>` of the run (its row and its children). */
  readonly node: HTMLLIElement;
  /** Where the child runs go. */
  readonly children: HTMLUListElement;

  /** The run shown. */
  get run(): IRun | null {
    return this._run;
  }

  /** Show a run's latest data; `ui` is the MLflow UI URL for the link (none: no href). */
  update(run: IRun, ui: string | null, now: number): void {
    const trans = this._trans;
    this._run = run;
    this.node.dataset.status = String(run.status);
    const name = run.run_name || run.run_id;
    setText(this._name, name);
    setAttr(
      this._name,
      'title',
      trans.__('Open %1 in MLflow (run ID %2)', name, run.run_id)
    );
    const fragment = safeFragment(run.links?.run);
    const href = fragment !== null ? uiLink(ui, fragment) : null;
    if (href !== null) {
      setAttr(this._name, 'href', href);
    } else {
      this._name.removeAttribute('href');
    }

    const jobId = runJobId(run);
    setHidden(this._workload, jobId === null);
    setAttr(
      this._workload,
      'title',
      jobId ? trans.__('Show job run %1 in the Workloads panel', jobId) : ''
    );

    setText(this._status, statusLabel(trans, run.status));
    const statusClassName = `jp-air-exp-run-status jp-air-badge jp-air-status-badge ${statusClass(String(run.status))}`;
    if (this._status.className !== statusClassName) {
      this._status.className = statusClassName;
    }

    setText(this._start, formatStartTime(num(run.start_time), now));
    setAttr(
      this._start,
      'title',
      trans.__('Started %1', formatFullTime(num(run.start_time)))
    );
    this.tick(now);

    const metrics =
      run.metrics && typeof run.metrics === 'object' ? run.metrics : {};
    const names = Object.keys(metrics);
    const key = JSON.stringify(
      names.slice(0, MAX_METRICS).map(n => [n, metrics[n]])
    );
    if (key !== this._metricsKey) {
      this._metricsKey = key;
      this._metrics.replaceChildren(
        ...names.slice(0, MAX_METRICS).map(n => {
          const item = h('span', 'jp-air-exp-metric');
          item.append(
            h('span', 'jp-air-exp-metric-name', n),
            h('span', 'jp-air-exp-metric-value', formatMetric(metrics[n]))
          );
          item.title = `${n} = ${String(metrics[n])}`;
          return item;
        })
      );
    }
    setHidden(this._metrics, names.length === 0);
    setAttr(
      this._metrics,
      'title',
      names.length > MAX_METRICS
        ? names.map(n => `${n} = ${String(metrics[n])}`).join('\n')
        : ''
    );
  }

  /** Update the duration (ticks while RUNNING). */
  tick(now: number): void {
    const run = this._run;
    if (!run) {
      return;
    }
    const ms = runDurationMs(
      String(run.status),
      num(run.start_time),
      num(run.end_time),
      now
    );
    setText(
      this._duration,
      ms === null ? '' : formatRunDuration(this._trans, ms)
    );
    setHidden(this._duration, ms === null);
  }

  /** Mark the run as the highlighted one. */
  setHighlighted(highlighted: boolean): void {
    this.node.classList.toggle('jp-mod-highlighted', highlighted);
    if (highlighted) {
      this._row.setAttribute('aria-current', 'true');
    } else {
      this._row.removeAttribute('aria-current');
    }
  }

  /** Scroll the run into view (when the browser can). */
  scrollIntoView(): void {
    if (typeof this._row.scrollIntoView === 'function') {
      this._row.scrollIntoView({ block: 'nearest' });
    }
  }

  private readonly _trans: TranslationBundle;
  private readonly _row: HTMLDivElement;
  private readonly _name: HTMLAnchorElement;
  private readonly _status: HTMLSpanElement;
  private readonly _workload: HTMLButtonElement;
  private readonly _start: HTMLSpanElement;
  private readonly _duration: HTMLSpanElement;
  private readonly _metrics: HTMLDivElement;
  private _metricsKey = '';
  private _run: IRun | null = null;
}
