/**
 * The "Workloads" side panel: the user's job runs, newest first, filtered by status and
 * experiment, a page at a time; clicking one shows its page (attempts, MLflow links, YAML, Logs,
 * Cancel, Open experiment) in the panel, with a way back to the list.
 *
 * The models (model.ts for the list, job-model.ts for a job run) poll while the panel is shown
 * (faster while something is active); this view only renders them, in place. Plain DOM, text
 * through `textContent` only.
 */
import { ICommandRunner } from '../commands';
import { ShownWidget } from '../common/shown-widget';
import { Ticker } from '../common/ticker';
import {
  button,
  h,
  placeInOrder,
  setAttr,
  setHidden,
  setText
} from '../gpu/dom';
import { confirmCancelDialog } from './confirm';
import { jobStatusLabel } from './format';
import { JobModel } from './job-model';
import { ConfirmCancel, JobPage } from './job-page';
import { JobRow } from './job-row';
import {
  WORKLOADS_STATUS_FILTERS,
  WorkloadsModel,
  WorkloadsStatusFilter
} from './model';
import { isActiveStatus } from './types';

/** Make `items` exactly the children of `parent`, in order (others removed). */
function setChildren(parent: HTMLElement, items: readonly HTMLElement[]): void {
  placeInOrder(parent, items);
  while (parent.childNodes.length > items.length) {
    parent.lastChild!.remove();
  }
}

/** The label of a status filter. */
function filterLabel(filter: WorkloadsStatusFilter): string {
  if (filter === 'ALL') {
    return 'All';
  }
  return filter === 'ACTIVE'
    ? 'Active (pending, running)'
    : jobStatusLabel(filter);
}

export class WorkloadsPanel extends ShownWidget {
  constructor(options: WorkloadsPanel.IOptions) {
    super();
    this.addClass('jp-air-wl');
    this.addClass('jp-air-sidepanel');
    this._model = options.model;
    this._jobModel = options.jobModel;
    this._now = options.now ?? (() => Date.now());

    const header = h('div', 'jp-air-wl-header jp-air-sidepanel-header');
    // the list's Refresh (a job run's page has its own)
    this._refresh = button(
      'jp-air-wl-refresh jp-air-sidepanel-button',
      'Refresh',
      () => void this._model.refresh(),
      'Fetch the job runs now'
    );
    header.append(
      h('h2', 'jp-air-wl-title jp-air-sidepanel-title', 'Workloads'),
      this._refresh
    );

    // the list
    this._list = h('div', 'jp-air-wl-list');
    const controls = h('div', 'jp-air-wl-controls');
    const statusLabel = h('label', 'jp-air-wl-control');
    statusLabel.append(h('span', 'jp-air-wl-control-label', 'Status'));
    this._statusFilter = h('select', 'jp-air-wl-status-filter');
    this._statusFilter.title = 'Show only job runs with this status';
    for (const filter of WORKLOADS_STATUS_FILTERS) {
      const option = h('option', undefined, filterLabel(filter));
      option.value = filter;
      this._statusFilter.append(option);
    }
    this._statusFilter.addEventListener('change', () => {
      this._model.setStatusFilter(
        this._statusFilter.value as WorkloadsStatusFilter
      );
    });
    statusLabel.append(this._statusFilter);

    const experimentLabel = h('label', 'jp-air-wl-control');
    experimentLabel.append(h('span', 'jp-air-wl-control-label', 'Experiment'));
    this._experimentFilter = h('select', 'jp-air-wl-experiment-filter');
    this._experimentFilter.title = 'Show only job runs of this experiment';
    this._experimentFilter.addEventListener('change', () => {
      this._model.setExperiment(this._experimentFilter.value || null);
    });
    experimentLabel.append(this._experimentFilter);
    controls.append(statusLabel, experimentLabel);

    this._message = h('div', 'jp-air-wl-message');
    this._message.setAttribute('role', 'status');
    this._error = h('div', 'jp-air-wl-error');
    this._error.setAttribute('role', 'alert');
    this._jobs = h('ul', 'jp-air-wl-jobs');

    this._pager = h('div', 'jp-air-wl-pager');
    this._previous = button(
      'jp-air-wl-previous jp-air-sidepanel-button',
      '‹ Newer',
      () => this._model.previousPage(),
      'Newer job runs'
    );
    this._range = h('span', 'jp-air-wl-range');
    this._next = button(
      'jp-air-wl-next jp-air-sidepanel-button',
      'Older ›',
      () => this._model.nextPage(),
      'Older job runs'
    );
    this._pager.append(this._previous, this._range, this._next);
    this._list.append(
      controls,
      this._message,
      this._error,
      this._jobs,
      this._pager
    );

    // a job run's page
    this._page = new JobPage({
      model: this._jobModel,
      commands: options.commands,
      confirmCancel: options.confirmCancel ?? confirmCancelDialog,
      onBack: () => this.showList(),
      now: this._now
    });

    this.node.append(header, this._list, this._page.node);

    this._model.changed.connect(this._renderList, this);
    this._jobModel.changed.connect(this._renderPage, this);
    this._render();
  }

  get model(): WorkloadsModel {
    return this._model;
  }

  get jobModel(): JobModel {
    return this._jobModel;
  }

  /** What the panel shows: the list or a job run's page. */
  get view(): 'list' | 'job' {
    return this._jobModel.jobId !== null ? 'job' : 'list';
  }

  /** The row of a job run shown (for tests), `null` when not shown. */
  rowOf(jobId: string): JobRow | null {
    return this._rows.get(jobId) ?? null;
  }

  /** Show a job run's page. */
  openJob(id: string): void {
    this._model.stop();
    this._jobModel.setJob(id);
    if (this.isVisible) {
      this._jobModel.start();
    }
    this._render();
  }

  /** Back to the list. */
  showList(): void {
    this._jobModel.stop();
    this._jobModel.setJob(null);
    if (this.isVisible) {
      this._model.start();
    }
    this._render();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._ticker.stop();
    this._model.changed.disconnect(this._renderList, this);
    this._jobModel.changed.disconnect(this._renderPage, this);
    this._model.stop();
    this._jobModel.stop();
    super.dispose();
  }

  protected onShown(): void {
    if (this.view === 'job') {
      this._jobModel.start();
    } else {
      this._model.start();
    }
    this._updateTicker();
  }

  protected onHidden(): void {
    this._model.stop();
    this._jobModel.stop();
    this._ticker.stop();
  }

  private _render(): void {
    this._renderList();
    this._renderPage();
  }

  private _renderList(): void {
    if (this.isDisposed) {
      return;
    }
    const model = this._model;
    const showList = this.view === 'list';
    setHidden(this._list, !showList);
    setHidden(this._refresh, !showList);
    this.node.dataset.view = this.view;
    const state = model.state;
    this._list.dataset.state = state;

    if (this._statusFilter.value !== model.statusFilter) {
      this._statusFilter.value = model.statusFilter;
    }
    this._renderExperiments();

    const message =
      state === 'loading'
        ? 'Loading job runs…'
        : state === 'error'
          ? `Cannot load job runs: ${model.error}`
          : state === 'empty'
            ? model.statusFilter === 'ALL' && !model.experiment
              ? 'No job runs yet. Submit one with `air run workload.yaml` or %%air_run in a notebook.'
              : 'No job runs match these filters.'
            : '';
    setText(this._message, message);
    setHidden(this._message, !message);
    const stale =
      model.error !== null && model.page !== null
        ? `Cannot refresh: ${model.error}`
        : '';
    setText(this._error, stale);
    setHidden(this._error, !stale);

    const now = this._now();
    const seen = new Set<string>();
    const items: HTMLElement[] = [];
    for (const job of model.jobs) {
      if (seen.has(job.id)) {
        continue;
      }
      seen.add(job.id);
      let row = this._rows.get(job.id);
      if (!row) {
        row = new JobRow(job.id, r => this.openJob(r.jobId));
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

    const total = model.total;
    const paged = model.hasPrevious || model.hasNext;
    setHidden(this._pager, model.page === null || (!paged && total === 0));
    setText(
      this._range,
      items.length
        ? `${model.offset + 1}–${model.offset + items.length} of ${total}`
        : `${total} job run${total === 1 ? '' : 's'}`
    );
    setHidden(this._previous, !paged);
    setHidden(this._next, !paged);
    this._previous.disabled = !model.hasPrevious;
    this._next.disabled = !model.hasNext;
    this._updateTicker();
  }

  private _renderExperiments(): void {
    const names = this._model.experiments;
    const key = JSON.stringify(names);
    if (key !== this._experimentsKey) {
      this._experimentsKey = key;
      const all = h('option', undefined, 'All experiments');
      all.value = '';
      this._experimentFilter.replaceChildren(
        all,
        ...names.map(name => {
          const option = h('option', undefined, name);
          option.value = name;
          return option;
        })
      );
    }
    const value = this._model.experiment ?? '';
    if (this._experimentFilter.value !== value) {
      this._experimentFilter.value = value;
    }
    setAttr(
      this._experimentFilter,
      'title',
      value ? `Job runs of ${value}` : 'Show only job runs of this experiment'
    );
  }

  private _renderPage(): void {
    if (this.isDisposed) {
      return;
    }
    const showPage = this.view === 'job';
    this.node.dataset.view = this.view;
    setHidden(this._page.node, !showPage);
    setHidden(this._list, showPage);
    if (showPage) {
      this._page.render();
    }
    this._updateTicker();
  }

  /** Tick durations every second while shown and something is active. */
  private _updateTicker(): void {
    const live =
      this.view === 'job'
        ? this._page.isLive
        : this._model.jobs.some(job => isActiveStatus(job.status));
    this._ticker.setTicking(this.isVisible && live);
  }

  private _tick(): void {
    if (this.view === 'job') {
      this._page.tick();
      return;
    }
    const now = this._now();
    for (const row of this._rows.values()) {
      if (isActiveStatus(row.job?.status)) {
        row.tick(now);
      }
    }
  }

  private readonly _model: WorkloadsModel;
  private readonly _jobModel: JobModel;
  private readonly _now: () => number;
  private readonly _list: HTMLDivElement;
  private readonly _statusFilter: HTMLSelectElement;
  private readonly _experimentFilter: HTMLSelectElement;
  private readonly _message: HTMLDivElement;
  private readonly _error: HTMLDivElement;
  private readonly _jobs: HTMLUListElement;
  private readonly _pager: HTMLDivElement;
  private readonly _previous: HTMLButtonElement;
  private readonly _range: HTMLSpanElement;
  private readonly _next: HTMLButtonElement;
  private readonly _page: JobPage;
  private readonly _refresh: HTMLButtonElement;
  private readonly _rows = new Map<string, JobRow>();
  private _experimentsKey = '';
  private readonly _ticker = new Ticker(() => this._tick());
}

export namespace WorkloadsPanel {
  export interface IOptions {
    /** The list's state. */
    model: WorkloadsModel;
    /** A job run's page state. */
    jobModel: JobModel;
    /** Runs `jupyter-air:open-logs`, `open-mlflow`, `open-experiments`. */
    commands: ICommandRunner;
    /** Asks before cancelling; defaults to JupyterLab's dialog. */
    confirmCancel?: ConfirmCancel;
    /** Milliseconds clock; defaults to `Date.now`. */
    now?: () => number;
  }
}
