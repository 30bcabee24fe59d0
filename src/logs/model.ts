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
 * - At most `maxLines` lines are kept: the oldest are dropped when newer ones arrive (the cursor
 *   before the first kept line stays, to load them again), the newest when older pages load.
 * - A 403 (no access to the logs) stops everything and keeps the server's message to show; a
 *   404, a bad filter (400) likewise; other failures retry after a few seconds.
 */
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { APIError } from '../api';
import { ITimers, windowTimers } from '../common/timers';
import { describeError } from '../mlflow/api';
import { fetchJob } from '../workloads/api';
import { nodeCount } from '../workloads/format';
import { IJob, isActiveStatus } from '../workloads/types';
import { ILogFilters, ILogsCursor, fetchLogs } from './api';
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

export type JobFetcher = (id: string) => Promise<IJob>;

/** Filters of a fresh view: node 0, the latest attempt, every level, no text or time range. */
export function defaultFilters(): ILogFilters {
  return {
    node: 0,
    attempt: null,
    levels: [...LOG_LEVELS],
    q: '',
    since: null,
    until: null
  };
}

/** Whether a page call failed for a reason that retrying will not fix. */
function isFinal(error: unknown): boolean {
  return (
    error instanceof APIError &&
    (error.status === 400 || error.status === 403 || error.status === 404)
  );
}

function isAbort(error: unknown): boolean {
  return (
    (error instanceof Error && error.name === 'AbortError') ||
    (typeof DOMException !== 'undefined' &&
      error instanceof DOMException &&
      error.name === 'AbortError')
  );
}

export class LogsModel implements IDisposable {
  constructor(options: LogsModel.IOptions) {
    this.jobId = options.jobId;
    this._fetchLogs = options.fetchLogs ?? fetchLogs;
    this._fetchJob = options.fetchJob ?? fetchJob;
    this._timers = options.timers ?? windowTimers;
    this._pageSize = options.pageSize ?? PAGE_SIZE;
    this._maxLines = Math.max(options.maxLines ?? MAX_LINES, this._pageSize);
    this._waitS = options.waitS ?? WAIT_S;
    this._retryMs = options.retryMs ?? RETRY_MS;
    this._filters = { ...defaultFilters(), ...(options.filters ?? {}) };
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
    return this._lines;
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
    return this._job;
  }

  /** How many nodes the job run has. */
  get nodes(): number {
    return nodeCount(this._job);
  }

  /** How many attempts the job run has so far. */
  get attempts(): number {
    const fromJob = Array.isArray(this._job?.attempts)
      ? this._job!.attempts.length
      : 0;
    return Math.max(fromJob, this._attempts);
  }

  /** The job run's status, as the last answer said. */
  get jobStatus(): string {
    return this._jobStatus || String(this._job?.status ?? '');
  }

  /** The attempt the last answer read. */
  get attempt(): number {
    return this._attempt;
  }

  /** Whether no line will ever be written after the last one held. */
  get complete(): boolean {
    return this._complete;
  }

  /** Whether older lines can be loaded. */
  get hasOlder(): boolean {
    return this._prev !== null;
  }

  /** Whether newer lines than the last held exist for sure (dropped to load older ones). */
  get hasNewer(): boolean {
    return this._endTrimmed;
  }

  /** Whether lines are being read in one direction or the other. */
  get loadingOlder(): boolean {
    return this._loadingOlder;
  }

  /** Whether following is paused (the user scrolled up). */
  get paused(): boolean {
    return this._paused;
  }

  /** Whether new lines are being waited for now. */
  get following(): boolean {
    return this._loop !== null && !this._paused;
  }

  /** Whether the job may still write lines the view would follow. */
  get live(): boolean {
    return !this._complete && isActiveStatus(this.jobStatus);
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
    if (this._job === null) {
      void this._loadJob();
    }
    if (!this._loaded) {
      void this._reset();
    } else {
      this._ensureLoop();
    }
  }

  /** The view is hidden: nothing more is sent (the poll in flight is aborted). */
  stop(): void {
    if (!this._started) {
      return;
    }
    this._started = false;
    this._stopLoop();
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
    void this._reset();
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
    this._stopLoop();
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
    if (this._endTrimmed) {
      void this._reset();
      return;
    }
    this._emit('state');
    this._ensureLoop();
  }

  /**
   * The view is scrolled to the bottom: load the next page when newer lines were dropped (the
   * user is reading older ones), else follow again.
   */
  reachedBottom(): void {
    if (this._endTrimmed) {
      void this.loadNewer();
    } else {
      this.resume();
    }
  }

  /** Load the page after the last line held (no waiting). Resolves when done. */
  async loadNewer(): Promise<void> {
    if (
      this._next === null ||
      this._loadingNewer ||
      this._loop !== null ||
      this._isDisposed ||
      this._state !== 'lines'
    ) {
      return;
    }
    const generation = this._generation;
    this._loadingNewer = true;
    try {
      const page = await this._fetchLogs(this.jobId, this._filters, {
        after: this._next,
        limit: this._pageSize
      });
      if (generation !== this._generation || this._isDisposed) {
        return;
      }
      this._loadingNewer = false;
      this._append(page);
    } catch (error) {
      if (generation !== this._generation || this._isDisposed) {
        return;
      }
      this._loadingNewer = false;
      this._failed(error);
    }
  }

  /** Load the page before the first line held. Resolves when done (or nothing to do). */
  async loadOlder(): Promise<void> {
    if (
      this._prev === null ||
      this._loadingOlder ||
      this._isDisposed ||
      this._state !== 'lines'
    ) {
      return;
    }
    const generation = this._generation;
    this._loadingOlder = true;
    this._emit('state');
    try {
      const page = await this._fetchLogs(this.jobId, this._filters, {
        before: this._prev,
        limit: this._pageSize
      });
      if (generation !== this._generation || this._isDisposed) {
        return;
      }
      this._loadingOlder = false;
      this._notePage(page);
      const lines = Array.isArray(page.lines) ? page.lines : [];
      this._prev = page.prev ?? null;
      this._lines = lines.concat(this._lines);
      let removed = 0;
      if (this._lines.length > this._maxLines) {
        removed = this._lines.length - this._maxLines;
        this._lines.length = this._maxLines;
        this._next = this._lines[this._lines.length - 1].pos;
        this._endTrimmed = true;
        this._complete = false;
      }
      this._error = null;
      this._emit('prepend', lines.length, removed);
    } catch (error) {
      if (generation !== this._generation || this._isDisposed) {
        return;
      }
      this._loadingOlder = false;
      this._failed(error);
    }
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._started = false;
    this._generation++;
    this._stopLoop();
    Signal.clearData(this);
  }

  /** Read the tail again (first load, filter change). */
  private async _reset(): Promise<void> {
    const generation = ++this._generation;
    this._stopLoop();
    this._lines = [];
    this._prev = null;
    this._next = null;
    this._complete = false;
    this._endTrimmed = false;
    this._loadingOlder = false;
    this._loadingNewer = false;
    this._loaded = false;
    this._state = 'loading';
    this._error = null;
    this._emit('reset');
    if (!this._started) {
      return; // read when shown
    }
    try {
      const page = await this._fetchLogs(this.jobId, this._filters, {
        tail: true,
        limit: this._pageSize
      });
      if (generation !== this._generation || this._isDisposed) {
        return;
      }
      this._notePage(page);
      this._lines = Array.isArray(page.lines) ? page.lines.slice() : [];
      this._prev = page.prev ?? null;
      this._next = page.next;
      this._complete = page.complete === true;
      this._loaded = true;
      this._state = this._stateOf(page);
      this._emit('reset');
      this._ensureLoop();
    } catch (error) {
      if (generation !== this._generation || this._isDisposed) {
        return;
      }
      this._failed(error);
      if (!isFinal(error) && this._started) {
        // try again later (while shown)
        this._retry = this._timers.setTimeout(() => {
          this._retry = null;
          if (generation === this._generation && this._started) {
            void this._reset();
          }
        }, this._retryMs);
      }
    }
  }

  /** Start the follow loop when it should run and does not. */
  private _ensureLoop(): void {
    if (
      this._loop !== null ||
      !this._started ||
      this._paused ||
      this._isDisposed ||
      !this._loaded ||
      this._complete ||
      this._endTrimmed ||
      this._next === null ||
      (this._state !== 'lines' && this._state !== 'empty')
    ) {
      return;
    }
    const controller =
      typeof AbortController !== 'undefined' ? new AbortController() : null;
    this._controller = controller;
    const generation = this._generation;
    const loop = this._follow(generation, controller).finally(() => {
      if (this._loop === loop) {
        this._loop = null;
        this._controller = null;
      }
    });
    this._loop = loop;
    this._emit('state');
  }

  private _stopLoop(): void {
    this._loopGeneration++;
    this._controller?.abort();
    this._controller = null;
    this._loop = null;
    if (this._retry !== null) {
      this._timers.clearTimeout(this._retry);
      this._retry = null;
    }
    const wake = this._wake;
    this._wake = null;
    wake?.();
  }

  /** Wait `ms` (a retry); `_stopLoop` ends the wait early. */
  private _sleep(ms: number): Promise<void> {
    return new Promise<void>(resolve => {
      this._wake = resolve;
      this._retry = this._timers.setTimeout(() => {
        this._retry = null;
        this._wake = null;
        resolve();
      }, ms);
    });
  }

  /** Long-poll for lines after `next` until complete, paused, hidden, reset or disposed. */
  private async _follow(
    generation: number,
    controller: AbortController | null
  ): Promise<void> {
    const loopGeneration = this._loopGeneration;
    const current = () =>
      generation === this._generation &&
      loopGeneration === this._loopGeneration &&
      !this._isDisposed &&
      this._started &&
      !this._paused;
    while (current() && !this._complete && this._next !== null) {
      let page: ILogPage;
      try {
        page = await this._fetchLogs(
          this.jobId,
          this._filters,
          { after: this._next, limit: this._pageSize, wait: this._waitS },
          controller?.signal
        );
      } catch (error) {
        if (!current() || isAbort(error)) {
          return;
        }
        this._failed(error);
        if (isFinal(error)) {
          return;
        }
        await this._sleep(this._retryMs);
        continue;
      }
      if (!current()) {
        return;
      }
      this._append(page);
    }
  }

  private _append(page: ILogPage): void {
    this._notePage(page);
    const lines = Array.isArray(page.lines) ? page.lines : [];
    const wasEmpty = this._lines.length === 0;
    if (lines.length) {
      this._lines.push(...lines);
    }
    if (page.next) {
      this._next = page.next;
    }
    this._complete = page.complete === true;
    if (!page.more) {
      this._endTrimmed = false;
    }
    let removed = 0;
    if (this._lines.length > this._maxLines) {
      removed = this._lines.length - this._maxLines;
      this._prev = this._lines[removed - 1].pos;
      this._lines.splice(0, removed);
    } else if (wasEmpty && lines.length && this._prev === null) {
      this._prev = page.prev ?? null;
    }
    this._error = null;
    if (this._state === 'empty' || this._state === 'error') {
      this._state = this._lines.length ? 'lines' : this._stateOf(page);
    }
    this._emit('append', lines.length, removed);
  }

  /** What a page says about the job. */
  private _notePage(page: ILogPage): void {
    if (typeof page.job_status === 'string' && page.job_status) {
      const changed = page.job_status !== this._jobStatus;
      this._jobStatus = page.job_status;
      if (changed && this._job !== null && this._started) {
        void this._loadJob(); // new attempts, ended times
      }
    }
    if (typeof page.attempts === 'number') {
      this._attempts = page.attempts;
    }
    if (typeof page.attempt === 'number') {
      this._attempt = page.attempt;
    }
    this._purged = page.purged === true;
  }

  private _stateOf(page: ILogPage): LogsState {
    if (this._lines.length > 0) {
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

  private async _loadJob(): Promise<void> {
    try {
      const job = await this._fetchJob(this.jobId);
      if (this._isDisposed) {
        return;
      }
      this._job = job;
      this._emit('state');
    } catch {
      // the page answers say enough (status, attempts); the node count stays 1
    }
  }

  private _emit(kind: ILogsChange['kind'], added = 0, removed = 0): void {
    if (!this._isDisposed) {
      this._changed.emit({ kind, added, removed });
    }
  }

  /** Whether the logs of the job were purged (as the last answer said). */
  get purged(): boolean {
    return this._purged;
  }

  private readonly _changed = new Signal<this, ILogsChange>(this);
  private readonly _fetchLogs: LogsFetcher;
  private readonly _fetchJob: JobFetcher;
  private readonly _timers: ITimers;
  private readonly _pageSize: number;
  private readonly _maxLines: number;
  private readonly _waitS: number;
  private readonly _retryMs: number;
  private _filters: ILogFilters;
  private _lines: ILogLine[] = [];
  private _prev: string | null = null;
  private _next: string | null = null;
  private _complete = false;
  private _endTrimmed = false;
  private _loaded = false;
  private _loadingOlder = false;
  private _loadingNewer = false;
  private _state: LogsState = 'loading';
  private _error: string | null = null;
  private _job: IJob | null = null;
  private _jobStatus = '';
  private _attempts = 0;
  private _attempt = 0;
  private _purged = false;
  private _paused = false;
  private _started = false;
  private _isDisposed = false;
  private _generation = 0;
  private _loopGeneration = 0;
  private _loop: Promise<void> | null = null;
  private _controller: AbortController | null = null;
  private _retry: unknown = null;
  private _wake: (() => void) | null = null;
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
    timers?: ITimers;
    pageSize?: number;
    maxLines?: number;
    waitS?: number;
    retryMs?: number;
  }
}
