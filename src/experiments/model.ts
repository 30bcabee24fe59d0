/**
 * The Experiment panel's state, without any DOM: which experiment it shows (the active notebook's,
 * or one the user picked), its runs as a tree, the status filter, and when to ask again.
 *
 * - The query follows the active notebook (`runs?notebook=<path>`) unless an experiment was picked
 *   (`runs?experiment_id=<id>`); "back to this notebook's experiment" drops the pick.
 * - The status filter is sent to the server (so the run limit applies to matching runs) and also
 *   applied here (instant feedback, and no surprise if a server ignores it).
 * - While started (the panel is shown) it polls: every 2 s while MLflow starts, every 5 s while a
 *   run is RUNNING, else every 30 s (backing off while the server fails). Stopped (hidden), it
 *   sends nothing.
 * - An answer to an older query (the user switched notebooks meanwhile) is dropped.
 */
import { describeError } from '../api';
import { PolledModel } from '../common/polled-model';
import { IRunsQuery, fetchExperiments, fetchRuns } from '../mlflow/api';
import {
  IExperiment,
  IExperimentsPayload,
  IMlflowStatus,
  IRun,
  IRunsPayload,
  RUN_STATUSES
} from '../mlflow/types';
import { IMlflowStatusStore } from '../tokens';
import { IRunNode, nestRuns } from './tree';

/** Poll cadence (ms). */
export const STARTING_POLL_MS = 2000;
export const RUNNING_POLL_MS = 5000;
export const IDLE_POLL_MS = 30000;

/** At most this many runs per answer. */
export const RUNS_LIMIT = 100;

/** The status filter: all runs, or one status. */
export type StatusFilter = 'ALL' | (typeof RUN_STATUSES)[number];

export const STATUS_FILTERS: readonly StatusFilter[] = ['ALL', ...RUN_STATUSES];

/** What the panel shows. */
export type ExperimentsState =
  | 'no-notebook'
  | 'loading'
  | 'starting'
  | 'unreachable'
  | 'disabled'
  | 'error'
  | 'empty'
  | 'runs';

/** Fetchers (injectable for tests). */
export type RunsFetcher = (query: IRunsQuery) => Promise<IRunsPayload>;
export type ExperimentsFetcher = () => Promise<IExperimentsPayload>;

/** The state behind one Experiment panel. */
export class ExperimentsModel extends PolledModel {
  constructor(options: ExperimentsModel.IOptions = {}) {
    super('jupyter-air:experiments');
    this._fetchRuns = options.fetchRuns ?? fetchRuns;
    this._fetchExperiments = options.fetchExperiments ?? fetchExperiments;
    this._store = options.store ?? null;
    this._limit = options.limit ?? RUNS_LIMIT;
  }

  /** The active notebook's path, `null` when there is none. */
  get notebookPath(): string | null {
    return this._notebookPath;
  }

  /** The experiment picked instead of the notebook's, `null` when following the notebook. */
  get selectedExperimentId(): string | null {
    return this._selected;
  }

  /** The status filter. */
  get filter(): StatusFilter {
    return this._filter;
  }

  /** The run to highlight (opened from a run display), `null` for none. */
  get highlightedRunId(): string | null {
    return this._highlight;
  }

  /** The last answer for the current query, `null` before it (or after a switch). */
  get payload(): IRunsPayload | null {
    return this._payload;
  }

  /** The MLflow status of the last answer. */
  get mlflow(): IMlflowStatus | null {
    return this._payload?.mlflow ?? null;
  }

  /** The experiments to pick from (`air/api/experiments`), by name. */
  get experiments(): readonly IExperiment[] {
    return this._experiments;
  }

  /** The current query, `null` when there is nothing to ask (no notebook, nothing picked). */
  get query(): IRunsQuery | null {
    const base: IRunsQuery = {};
    if (this._selected !== null) {
      base.experiment_id = this._selected;
    } else if (this._notebookPath !== null) {
      base.notebook = this._notebookPath;
    } else {
      return null;
    }
    if (this._filter !== 'ALL') {
      base.status = this._filter;
    }
    base.limit = this._limit;
    return base;
  }

  /** The experiment's name: the answer's, else the picked one's from the list. */
  get experimentName(): string | null {
    const payload = this._payload;
    const answered = payload
      ? payload.experiment?.name || payload.experiment_name || null
      : null;
    if (answered !== null || this._selected === null) {
      return answered;
    }
    const picked = this._experiments.find(
      e => e.experiment_id === this._selected
    );
    return picked?.name || null;
  }

  /** The experiment id shown, when it exists. */
  get experimentId(): string | null {
    return this._payload?.experiment?.experiment_id ?? this._selected;
  }

  /** The runs shown: the answer's, with the status filter applied. */
  get runs(): readonly IRun[] {
    const runs = Array.isArray(this._payload?.runs) ? this._payload!.runs : [];
    return this._filter === 'ALL'
      ? runs
      : runs.filter(run => run && run.status === this._filter);
  }

  /** The runs shown as a tree (children under their parents). */
  get tree(): IRunNode[] {
    return nestRuns(this.runs);
  }

  /** Whether some run of the answer is RUNNING (polls faster). */
  get hasRunning(): boolean {
    const runs = this._payload?.runs;
    return (
      Array.isArray(runs) && runs.some(run => run && run.status === 'RUNNING')
    );
  }

  /** What the panel shows. */
  get state(): ExperimentsState {
    if (this.query === null) {
      return 'no-notebook';
    }
    const payload = this._payload;
    if (!payload) {
      return this._error !== null ? 'error' : 'loading';
    }
    const mlflow = payload.mlflow;
    const runs = this.runs;
    if (mlflow?.state === 'starting' && runs.length === 0) {
      return 'starting';
    }
    if (mlflow?.state === 'disabled') {
      return 'disabled';
    }
    if (
      (mlflow?.state === 'failed' ||
        mlflow?.state === 'stopped' ||
        !!mlflow?.error) &&
      runs.length === 0
    ) {
      return 'unreachable';
    }
    return runs.length === 0 ? 'empty' : 'runs';
  }

  /** Milliseconds until the next poll while shown; `null`: nothing to poll. */
  nextDelay(): number | null {
    if (this.query === null) {
      return null;
    }
    const state = this._payload?.mlflow?.state;
    if (state === 'disabled') {
      return IDLE_POLL_MS;
    }
    if (state === 'starting') {
      return STARTING_POLL_MS;
    }
    return this.hasRunning ? RUNNING_POLL_MS : IDLE_POLL_MS;
  }

  /** Follow the active notebook (`null`: none is open). */
  setNotebook(path: string | null): void {
    const next = path || null;
    if (next === this._notebookPath) {
      return;
    }
    this._pendingExperiment = null;
    this._notebookPath = next;
    this._notebookExperimentId = null;
    if (this._selected === null) {
      this._targetChanged();
    } else {
      this._changed.emit();
    }
  }

  /** Show another experiment's runs (`null`: back to the notebook's). */
  selectExperiment(experimentId: string | null): void {
    const next = experimentId || null;
    this._pendingExperiment = null;
    if (next === this._selected) {
      return;
    }
    this._selected = next;
    this._targetChanged();
  }

  /** Back to the active notebook's experiment. */
  backToNotebook(): void {
    this.selectExperiment(null);
  }

  /** Filter the runs by status. */
  setFilter(filter: StatusFilter): void {
    if (!STATUS_FILTERS.includes(filter) || filter === this._filter) {
      return;
    }
    this._filter = filter;
    this._changed.emit(); // the runs already here are filtered at once
    this.refreshIfShown();
  }

  /**
   * Show a run (from a run display's "Experiment panel" button): its experiment, all statuses,
   * and the run highlighted.
   */
  focusRun(options: { experiment_id?: string; run_id?: string }): void {
    const experimentId = options.experiment_id || null;
    this._highlight = options.run_id || null;
    this._scrollRequested = this._highlight !== null;
    let changed = false;
    if (this._filter !== 'ALL' && this._highlight !== null) {
      this._filter = 'ALL';
      changed = true;
    }
    this._pendingExperiment = null;
    if (experimentId !== null && experimentId !== this._selected) {
      const followingNotebook =
        this._selected === null && this._notebookPath !== null;
      if (followingNotebook && this._notebookExperimentId === null) {
        // the notebook's experiment is not known yet: decide on its answer
        this._pendingExperiment = experimentId;
      } else if (
        !followingNotebook ||
        this._notebookExperimentId !== experimentId
      ) {
        this._selected = experimentId;
        this._targetChanged();
        return;
      }
    }
    this._changed.emit();
    if (changed || this._highlight !== null) {
      this.refreshIfShown();
    }
  }

  /** Highlight a run (the user clicked it). */
  setHighlight(runId: string | null): void {
    if (runId !== this._highlight) {
      this._highlight = runId;
      this._changed.emit();
    }
  }

  /** Whether the view should scroll to the highlighted run (answers `true` once per request). */
  takeScrollRequest(): boolean {
    if (
      this._scrollRequested &&
      this._highlight !== null &&
      this.runs.some(run => run.run_id === this._highlight)
    ) {
      this._scrollRequested = false;
      return true;
    }
    return false;
  }

  /** Start polling (the panel is shown): fetches the runs and the experiment list now. */
  start(): void {
    if (this.isDisposed || this.isStarted) {
      return;
    }
    super.start();
    void this.refreshExperiments();
  }

  /** Fetch the list of experiments (for the picker). */
  async refreshExperiments(): Promise<void> {
    if (this.isDisposed) {
      return;
    }
    try {
      const payload = await this._fetchExperiments();
      if (this.isDisposed) {
        return;
      }
      this._store?.update(payload?.mlflow);
      const list = Array.isArray(payload?.experiments)
        ? payload.experiments
        : [];
      this._experiments = list
        .filter(e => e && typeof e.experiment_id === 'string')
        .slice()
        .sort((a, b) => String(a.name).localeCompare(String(b.name)));
      this._experimentsError = null;
    } catch (error) {
      if (this.isDisposed) {
        return;
      }
      this._experimentsError = describeError(error);
    }
    this._changed.emit();
  }

  /** Why the experiment list could not be fetched, `null` when it could. */
  get experimentsError(): string | null {
    return this._experimentsError;
  }

  /** The notebook or the picked experiment changed: forget the old answer, ask now. */
  private _targetChanged(): void {
    this._payload = null;
    this._error = null;
    this._changed.emit();
    if (this.query !== null) {
      this.refreshIfShown();
    } else {
      this.poller.reschedule();
    }
  }

  protected queryKey(): string {
    return JSON.stringify(this.query);
  }

  /** One runs call for the current query (dropped if the query changed meanwhile). */
  protected async poll(): Promise<void> {
    const query = this.query;
    if (this.isDisposed || query === null) {
      return;
    }
    const payload = await this.answer(() => this._fetchRuns(query));
    if (payload === null) {
      return;
    }
    this._payload = payload;
    this._store?.update(payload?.mlflow);
    if (query.notebook !== undefined) {
      const notebookExperiment = payload?.experiment?.experiment_id ?? null;
      this._notebookExperimentId = notebookExperiment;
      const pending = this._pendingExperiment;
      this._pendingExperiment = null;
      if (pending !== null && pending !== notebookExperiment) {
        // the run shown is in another experiment than the notebook's: show that one
        this._selected = pending;
        this._targetChanged();
        return;
      }
    }
    this._changed.emit();
  }

  private readonly _fetchRuns: RunsFetcher;
  private readonly _fetchExperiments: ExperimentsFetcher;
  private readonly _store: IMlflowStatusStore | null;
  private readonly _limit: number;
  private _notebookPath: string | null = null;
  private _notebookExperimentId: string | null = null;
  private _selected: string | null = null;
  private _pendingExperiment: string | null = null;
  private _filter: StatusFilter = 'ALL';
  private _highlight: string | null = null;
  private _scrollRequested = false;
  private _payload: IRunsPayload | null = null;
  private _experiments: IExperiment[] = [];
  private _experimentsError: string | null = null;
}

export namespace ExperimentsModel {
  export interface IOptions {
    /** Calls `air/api/runs`; defaults to the real server. */
    fetchRuns?: RunsFetcher;
    /** Calls `air/api/experiments`; defaults to the real server. */
    fetchExperiments?: ExperimentsFetcher;
    /** Where MLflow statuses from answers are shared (the MLflow tab's command reads it). */
    store?: IMlflowStatusStore;
    /** At most this many runs per answer (default 100). */
    limit?: number;
  }
}
