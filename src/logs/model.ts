/**
 * The Logs view's state, without any DOM: a window of a job run's log lines read through the
 * logs API's cursors, its filters, and following a running job.
 *
 * - Opening (and every filter change) reads the **tail**: the last `pageSize` matching lines of
 *   the chosen node and attempt (`tail=1`), so a log of millions of lines opens at once. The
 *   server does all the filtering (level, text, time range).
 * - **Older lines** load a page at a time (`before=prev`) when the view scrolls to the top;
 *   **newer ones** (`after=next`) when it is at the bottom.
 * - **Following**: while the job may still write (`complete` is false) and the view is shown and
 *   not paused, one long-poll at a time asks for lines after `next` (`wait=25`): the server
 *   answers as soon as there is one. Following the latest attempt goes on into retries. Pausing
 *   (the user scrolled up), hiding the view or changing a filter aborts the poll in flight.
 * - At most `maxLines` lines are kept (line-window.ts): the oldest are dropped when newer ones
 *   arrive (the cursor before the first kept line stays, to load them again), the newest when
 *   older pages load.
 * - A 403 (no access to the logs) stops everything and keeps the server's message to show; a
 *   404, a bad filter (400) likewise; other failures retry after a few seconds, backing off.
 *
 * Reading the tail is a `Poller` (common/poller.ts), following a `LogsFollower` (follower.ts,
 * on a `Poller` too): one call at a time, nothing while hidden, the retry delay growing while the
 * server fails.
 */
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { APIError, describeError } from '../api';
import { Poller } from '../common/poller';
import { fetchJob } from '../workloads/api';
import { IJob, isActiveStatus } from '../workloads/types';
import {
  ILogFilters,
  ILogsCursor,
  defaultFilters,
  fetchLogs,
  isFinal
} from './api';
import { LogsFollower } from './follower';
import { JobFetcher, LogsJobInfo } from './job-info';
import { LineWindow } from './line-window';
import { ILogLine, ILogPage, LOG_LEVELS, LogLevel } from './types';

/** Lines per page. */
export const PAGE_SIZE = 1000;
/** Lines kept in memory at most. */
export const MAX_LINES = 50_000;
/** Seconds the server may hold a follow request open. */
export const WAIT_S = 25;
/** Milliseconds before retrying after a failed call. */
export const RETRY_MS = 3000;

/** What the view shows. */
export type LogsState =
  | 'loading'
  | 'lines'
  | 'empty'
  | 'forbidden'
  | 'not-found'
  | 'purged'
  | 'error';

/** What changed, for the view to keep its scroll position. */
export interface ILogsChange {
  /**
   * `reset`: new lines from scratch (scroll to the bottom); `append`: `added` lines at the end
   * (and `removed` dropped at the start); `prepend`: `added` lines at the start (and `removed`
   * dropped at the end); `state`: anything else.
   */
  kind: 'reset' | 'append' | 'prepend' | 'state';
  added: number;
  removed: number;
}

export type LogsFetcher = (
  jobId: string,
  filters: ILogFilters,
  cursor: ILogsCursor,
  signal?: AbortSignal
) => Promise<ILogPage>;

export class LogsModel implements IDisposable {
  constructor(options: LogsModel.IOptions) {
    this.jobId = options.jobId;
    this._fetchLogs = options.fetchLogs ?? fetchLogs;
    this._jobInfo = new LogsJobInfo(
      this.jobId,
      options.fetchJob ?? fetchJob,
      () => this._emit('state')
    );
    this._pageSize = options.pageSize ?? PAGE_SIZE;
    this._window = new LineWindow(
      Math.max(options.maxLines ?? MAX_LINES, this._pageSize)
    );
    this._waitS = options.waitS ?? WAIT_S;
    const retryMs = options.retryMs ?? RETRY_MS;
    this._filters = { ...defaultFilters(), ...(options.filters ?? {}) };
    // the tail: read once per filter; retried (backing off) while the read fails
    this._tail = new Poller({
      name: 'jupyter-air:logs-tail',
      poll: () => this._readTail(),
      interval: () => null,
      retryMs,
      standby: 'never'
    });
    this._follow = new LogsFollower({
      after: () => this._window.next,
      read: (after, signal) =>
        this._fetchLogs(
          this.jobId,
          this._filters,
          { after, limit: this._pageSize, wait: this._waitS },
          signal
        ),
      answered: page => {
        this._append(page);
        return !this._window.complete && this._window.next !== null;
      },
      failed: error => {
        this._failed(error);
        return !isFinal(error);
      },
      stopped: () => this._emit('state'),
      retryMs
    });
  }

  /** The job run whose logs these are. */
  readonly jobId: string;

  /** Emitted after every change. */
  get changed(): ISignal<this, ILogsChange> {
    return this._changed;
  }

  get filters(): Readonly<ILogFilters> {
    return this._filters;
  }

  /** Whether a filter narrows the lines (level, text or time). */
  get isFiltered(): boolean {
    const f = this._filters;
    return (
      !!f.q ||
      f.since !== null ||
      f.until !== null ||
      (f.levels.length > 0 && f.levels.length < LOG_LEVELS.length)
    );
  }

  /** The lines held, oldest first. */
  get lines(): readonly ILogLine[] {
    return this._window.lines;
  }

  get state(): LogsState {
    return this._state;
  }

  /** The server's message for `forbidden`, `not-found` and `error` (and a stale failure). */
  get error(): string | null {
    return this._error;
  }

  /** The job run (for the node and attempt choices), `null` until known. */
  get job(): IJob | null {
    return this._jobInfo.job;
  }

  /** How many nodes the job run has. */
  get nodes(): number {
    return this._jobInfo.nodes;
  }

  /** How many attempts the job run has so far. */
  get attempts(): number {
    return this._jobInfo.attempts;
  }

  /** The job run's status, as the last answer said. */
  get jobStatus(): string {
    return this._jobInfo.status;
  }

  /** The attempt the last answer read. */
  get attempt(): number {
    return this._jobInfo.attempt;
  }

  /** Whether no line will ever be written after the last one held. */
  get complete(): boolean {
    return this._window.complete;
  }

  /** Whether older lines can be loaded. */
  get hasOlder(): boolean {
    return this._window.prev !== null;
  }

  /** Whether newer lines than the last held exist for sure (dropped to load older ones). */
  get hasNewer(): boolean {
    return this._window.endTrimmed;
  }

  /** Whether older lines are being read. */
  get loadingOlder(): boolean {
    return this._loadingOlder;
  }

  /** Whether following is paused (the user scrolled up). */
  get paused(): boolean {
    return this._paused;
  }

  /** Whether new lines are being waited for now. */
  get following(): boolean {
    return this._follow.isStarted && !this._paused;
  }

  /** Whether the job may still write lines the view would follow. */
  get live(): boolean {
    return !this.complete && isActiveStatus(this.jobStatus);
  }

  /** Whether the logs of the job were purged (as the last answer said). */
  get purged(): boolean {
    return this._jobInfo.purged;
  }

  get isStarted(): boolean {
    return this._started;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** The view is shown: read the tail (first time), then follow. */
  start(): void {
    if (this._started || this._isDisposed) {
      return;
    }
    this._started = true;
    if (this._jobInfo.job === null) {
      void this._jobInfo.load();
    }
    if (!this._loaded) {
      this._reset();
    } else {
      this._ensureFollowing();
    }
  }

  /** The view is hidden: nothing more is sent (the poll in flight is aborted). */
  stop(): void {
    if (!this._started) {
      return;
    }
    this._started = false;
    this._tail.stop();
    this._stopFollowing();
  }

  /** Change filters: the lines are read again from the tail. */
  setFilters(change: Partial<ILogFilters>): void {
    const next: ILogFilters = { ...this._filters, ...change };
    next.levels = LOG_LEVELS.filter(level => next.levels.includes(level));
    next.q = next.q ?? '';
    if (JSON.stringify(next) === JSON.stringify(this._filters)) {
      return;
    }
    this._filters = next;
    this._paused = false;
    this._reset();
  }

  /** Show or hide one level. */
  toggleLevel(level: LogLevel): void {
    const levels = this._filters.levels.includes(level)
      ? this._filters.levels.filter(l => l !== level)
      : [...this._filters.levels, level];
    this.setFilters({ levels });
  }

  /** Stop following (the user scrolled up). */
  pause(): void {
    if (this._paused || this._isDisposed) {
      return;
    }
    this._paused = true;
    this._stopFollowing();
    this._emit('state');
  }

  /**
   * Follow again (the Resume button, or the user is back at the bottom). When newer lines were
   * dropped to load older ones, the tail is read again.
   */
  resume(): void {
    if (!this._paused || this._isDisposed) {
      return;
    }
    this._paused = false;
    if (this._window.endTrimmed) {
      this._reset();
      return;
    }
    this._emit('state');
    this._ensureFollowing();
  }

  /**
   * The view is scrolled to the bottom: load the next page when newer lines were dropped (the
   * user is reading older ones), else follow again.
   */
  reachedBottom(): void {
    if (this._window.endTrimmed) {
      void this.loadNewer();
    } else {
      this.resume();
    }
  }

  /** Load the page after the last line held (no waiting). Resolves when done. */
  async loadNewer(): Promise<void> {
    const next = this._window.next;
    if (
      next === null ||
      this._loadingNewer ||
      this._follow.isStarted ||
      this._isDisposed ||
      this._state !== 'lines'
    ) {
      return;
    }
    this._loadingNewer = true;
    const page = await this._read({ after: next, limit: this._pageSize });
    this._loadingNewer = false;
    if (page !== null) {
      this._append(page);
    }
  }

  /** Load the page before the first line held. Resolves when done (or nothing to do). */
  async loadOlder(): Promise<void> {
    const prev = this._window.prev;
    if (
      prev === null ||
      this._loadingOlder ||
      this._isDisposed ||
      this._state !== 'lines'
    ) {
      return;
    }
    this._loadingOlder = true;
    this._emit('state');
    const page = await this._read({ before: prev, limit: this._pageSize });
    this._loadingOlder = false;
    if (page !== null) {
      this._notePage(page);
      const { added, removed } = this._window.prepend(page);
      this._error = null;
      this._emit('prepend', added, removed);
    }
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._started = false;
    this._generation++;
    this._jobInfo.dispose();
    this._tail.dispose();
    this._stopFollowing();
    this._follow.dispose();
    Signal.clearData(this);
  }

  /**
   * One page for the current filters: `null` when the filters changed (or the model went away)
   * meanwhile, or the call failed (recorded for the view).
   */
  private async _read(cursor: ILogsCursor): Promise<ILogPage | null> {
    const generation = this._generation;
    try {
      const page = await this._fetchLogs(this.jobId, this._filters, cursor);
      return generation === this._generation && !this._isDisposed ? page : null;
    } catch (error) {
      if (generation === this._generation && !this._isDisposed) {
        this._failed(error);
      }
      return null;
    }
  }

  /** Forget the lines and read the tail again (first load, filter change). */
  private _reset(): void {
    this._generation++;
    this._stopFollowing();
    this._tail.stop();
    this._window.clear();
    this._loadingOlder = false;
    this._loadingNewer = false;
    this._loaded = false;
    this._state = 'loading';
    this._error = null;
    this._emit('reset');
    if (this._started) {
      this._tail.start(); // read when shown
    }
  }

  /** One read of the tail; a failure that retrying may fix is rethrown (the poller retries). */
  private async _readTail(): Promise<void> {
    const generation = this._generation;
    let page: ILogPage;
    try {
      page = await this._fetchLogs(this.jobId, this._filters, {
        tail: true,
        limit: this._pageSize
      });
    } catch (error) {
      if (generation !== this._generation || this._isDisposed) {
        return;
      }
      this._failed(error);
      if (isFinal(error)) {
        this._tail.stop();
        return;
      }
      throw error;
    }
    if (generation !== this._generation || this._isDisposed) {
      return;
    }
    this._tail.stop();
    this._notePage(page);
    this._window.reset(page);
    this._loaded = true;
    this._state = this._stateOf(page);
    this._emit('reset');
    this._ensureFollowing();
  }

  /** Start following when it should and does not. */
  private _ensureFollowing(): void {
    if (
      this._follow.isStarted ||
      !this._started ||
      this._paused ||
      this._isDisposed ||
      !this._loaded ||
      this._window.complete ||
      this._window.endTrimmed ||
      this._window.next === null ||
      (this._state !== 'lines' && this._state !== 'empty')
    ) {
      return;
    }
    this._follow.start();
    this._emit('state');
  }

  /** Stop following: the long-poll in flight is aborted. */
  private _stopFollowing(): void {
    this._follow.stop();
  }

  private _append(page: ILogPage): void {
    this._notePage(page);
    const { added, removed } = this._window.append(page);
    this._error = null;
    if (this._state === 'empty' || this._state === 'error') {
      this._state = this._stateOf(page);
    }
    this._emit('append', added, removed);
  }

  /** What a page says about the job (a new status while shown: the job run is read again). */
  private _notePage(page: ILogPage): void {
    this._jobInfo.notePage(page, this._started);
  }

  private _stateOf(page: ILogPage): LogsState {
    if (this._window.lines.length > 0) {
      return 'lines';
    }
    return page.purged ? 'purged' : 'empty';
  }

  private _failed(error: unknown): void {
    this._error = describeError(error);
    if (error instanceof APIError && error.status === 403) {
      this._error = error.message;
      this._state = 'forbidden';
    } else if (error instanceof APIError && error.status === 404) {
      this._error = error.message;
      this._state = 'not-found';
    } else if (
      !this._loaded ||
      (error instanceof APIError && error.status === 400)
    ) {
      this._state = 'error';
    }
    this._emit('state');
  }

  private _emit(kind: ILogsChange['kind'], added = 0, removed = 0): void {
    if (!this._isDisposed) {
      this._changed.emit({ kind, added, removed });
    }
  }

  private readonly _changed = new Signal<this, ILogsChange>(this);
  private readonly _fetchLogs: LogsFetcher;
  private readonly _jobInfo: LogsJobInfo;
  private readonly _pageSize: number;
  private readonly _waitS: number;
  private readonly _window: LineWindow;
  private readonly _tail: Poller;
  private readonly _follow: LogsFollower;
  private _filters: ILogFilters;
  private _loaded = false;
  private _loadingOlder = false;
  private _loadingNewer = false;
  private _state: LogsState = 'loading';
  private _error: string | null = null;
  private _paused = false;
  private _started = false;
  private _isDisposed = false;
  private _generation = 0;
}

export namespace LogsModel {
  export interface IOptions {
    jobId: string;
    /** Initial filters (node, attempt…). */
    filters?: Partial<ILogFilters>;
    /** Calls the logs API; defaults to the real server. */
    fetchLogs?: LogsFetcher;
    /** Calls `GET air/api/workloads/{id}`; defaults to the real server. */
    fetchJob?: JobFetcher;
    pageSize?: number;
    maxLines?: number;
    waitS?: number;
    /** Milliseconds before the first retry after a failed call (then backing off). */
    retryMs?: number;
  }
}
