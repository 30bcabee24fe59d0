/**
 * The Workloads panel's list of job runs: status and experiment filters, the rows (job-row.ts)
 * kept by job id and updated in place, a line that says why there are none, and the pager.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import {
  alertBox,
  button,
  h,
  labelled,
  setAttr,
  setChildren,
  setHidden,
  setOptions,
  setText,
  setValue
} from '../common/dom';
import { statusLabel } from '../common/status';
import { JobRow } from './job-row';
import {
  WORKLOADS_STATUS_FILTERS,
  WorkloadsModel,
  WorkloadsStatusFilter
} from './model';
import { isActiveStatus } from './types';

/** The label of a status filter. */
function filterLabel(
  trans: TranslationBundle,
  filter: WorkloadsStatusFilter
): string {
  if (filter === 'ALL') {
    return trans.__('All');
  }
  return filter === 'ACTIVE'
    ? trans.__('Active (pending, queued, running)')
    : statusLabel(trans, filter);
}

export class JobList {
  constructor(
    model: WorkloadsModel,
    trans: TranslationBundle,
    openJob: (id: string) => void
  ) {
    this._model = model;
    this._trans = trans;
    this._openJob = openJob;
    this.node = h('div', 'jp-air-wl-list');

    this._statusFilter = h('select', 'jp-air-wl-status-filter');
    this._statusFilter.title = trans.__('Show only job runs with this status');
    setOptions(
      this._statusFilter,
      WORKLOADS_STATUS_FILTERS.map(f => [f, filterLabel(trans, f)])
    );
    this._statusFilter.addEventListener('change', () => {
      model.setStatusFilter(this._statusFilter.value as WorkloadsStatusFilter);
    });
    this._experimentFilter = h('select', 'jp-air-wl-experiment-filter');
    this._experimentFilter.addEventListener('change', () => {
      model.setExperiment(this._experimentFilter.value || null);
    });
    const controls = h('div', 'jp-air-wl-controls');
    controls.append(
      labelled(
        'jp-air-wl-control',
        'jp-air-wl-control-label',
        trans.__('Status'),
        this._statusFilter
      ),
      labelled(
        'jp-air-wl-control',
        'jp-air-wl-control-label',
        trans.__('Experiment'),
        this._experimentFilter
      )
    );

    this._message = h('div', 'jp-air-wl-message');
    this._message.setAttribute('role', 'status');
    this._error = alertBox('jp-air-wl-error');
    this._previous = button(
      'jp-air-wl-previous jp-air-sidepanel-button',
      trans.__('‹ Newer'),
      () => model.previousPage(),
      trans.__('Newer job runs')
    );
    this._next = button(
      'jp-air-wl-next jp-air-sidepanel-button',
      trans.__('Older ›'),
      () => model.nextPage(),
      trans.__('Older job runs')
    );
    this._pager.append(this._previous, this._range, this._next);
    this.node.append(
      controls,
      this._message,
      this._error,
      this._jobs,
      this._pager
    );
  }

  /** The list's element. */
  readonly node: HTMLDivElement;

  /** The row of a job run shown, `null` when not shown. */
  rowOf(jobId: string): JobRow | null {
    return this._rows.get(jobId) ?? null;
  }

  /** Whether a job run shown may still change (its duration ticks). */
  get isLive(): boolean {
    return this._model.jobs.some(job => isActiveStatus(job.status));
  }

  render(now: number): void {
    const trans = this._trans;
    const model = this._model;
    const state = model.state;
    this.node.dataset.state = state;
    setValue(this._statusFilter, model.statusFilter);
    this._renderExperiments();

    const message =
      state === 'loading'
        ? trans.__('Loading job runs…')
        : state === 'error'
          ? trans.__('Cannot load job runs: %1', model.error)
          : state === 'empty'
            ? model.statusFilter === 'ALL' && !model.experiment
              ? trans.__(
                  'No job runs yet. Submit one with %1 or %2 in a notebook.',
                  '`air run workload.yaml`',
                  '%%air_run'
                )
              : trans.__('No job runs match these filters.')
            : '';
    setText(this._message, message);
    setHidden(this._message, !message);
    const stale =
      model.error !== null && model.page !== null
        ? trans.__('Cannot refresh: %1', model.error)
        : '';
    setText(this._error, stale);
    setHidden(this._error, !stale);
    const shown = this._renderRows(now);
    this._renderPager(shown);
  }

  /** The durations of the active job runs shown. */
  tick(now: number): void {
    for (const row of this._rows.values()) {
      if (isActiveStatus(row.job?.status)) {
        row.tick(now);
      }
    }
  }

  /** One row per job run of the page, reused by id; returns how many are shown. */
  private _renderRows(now: number): number {
    const seen = new Set<string>();
    const items: HTMLElement[] = [];
    for (const job of this._model.jobs) {
      if (seen.has(job.id)) {
        continue;
      }
      seen.add(job.id);
      let row = this._rows.get(job.id);
      if (!row) {
        row = new JobRow(this._trans, job.id, r => this._openJob(r.jobId));
        this._rows.set(job.id, row);
      }
      row.update(job, now);
      items.push(row.node);
    }
    setChildren(this._jobs, items);
    for (const id of Array.from(this._rows.keys())) {
      if (!seen.has(id)) {
        this._rows.delete(id);
      }
    }
    setHidden(this._jobs, items.length === 0);
    return items.length;
  }

  private _renderPager(shown: number): void {
    const trans = this._trans;
    const model = this._model;
    const total = model.total;
    const paged = model.hasPrevious || model.hasNext;
    setHidden(this._pager, model.page === null || (!paged && total === 0));
    setText(
      this._range,
      shown
        ? trans.__('%1–%2 of %3', model.offset + 1, model.offset + shown, total)
        : trans._n('%1 job run', '%1 job runs', total)
    );
    setHidden(this._previous, !paged);
    setHidden(this._next, !paged);
    this._previous.disabled = !model.hasPrevious;
    this._next.disabled = !model.hasNext;
  }

  private _renderExperiments(): void {
    const trans = this._trans;
    const names = this._model.experiments;
    setOptions(this._experimentFilter, [
      ['', trans.__('All experiments')],
      ...names.map(name => [name, name] as [string, string])
    ]);
    const value = this._model.experiment ?? '';
    setValue(this._experimentFilter, value);
    setAttr(
      this._experimentFilter,
      'title',
      value
        ? trans.__('Job runs of %1', value)
        : trans.__('Show only job runs of this experiment')
    );
  }

  private readonly _model: WorkloadsModel;
  private readonly _trans: TranslationBundle;
  private readonly _openJob: (id: string) => void;
  private readonly _statusFilter: HTMLSelectElement;
  private readonly _experimentFilter: HTMLSelectElement;
  private readonly _message: HTMLDivElement;
  private readonly _error: HTMLDivElement;
  private readonly _jobs = h('ul', 'jp-air-wl-jobs');
  private readonly _pager = h('div', 'jp-air-wl-pager');
  private readonly _range = h('span', 'jp-air-wl-range');
  private readonly _previous: HTMLButtonElement;
  private readonly _next: HTMLButtonElement;
  private readonly _rows = new Map<string, JobRow>();
}
