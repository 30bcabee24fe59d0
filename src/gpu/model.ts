/**
 * The GPU Resources panel's state, without any DOM: what the server said last, the merged
 * sample history, and when to ask again.
 *
 * Why a separate model: polling, idleness and history merging are the parts that are easy to get
 * subtly wrong (requests while hidden, gaps after a pause, unbounded growth), so they live here
 * where jest can drive them with a fake clock, fake timers and a fake fetch.
 *
 * - The first fetch asks for the whole window; later ones send `since=<t of newest sample>` and
 *   merge the delta (de-duplicated by `t`, trimmed to `history_s` before the newest sample).
 * - While started (the panel is shown) it polls every `interval_s`; stopped, it sends nothing.
 * - Without user activity for `idle_timeout_s` it stops polling and becomes 'paused' (the server
 *   then pauses its own sampling too) until `resume()`, `refresh()` or a restart.
 */
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { APIError, requestAPI } from '../api';
import { ITimers, windowTimers } from '../common/timers';
import { IGpuPayload, ISample } from './types';

/** Defaults used until the server has said otherwise. */
export const DEFAULT_INTERVAL_S = 10;
export const DEFAULT_IDLE_TIMEOUT_S = 300;
export const DEFAULT_HISTORY_S = 7200;

/** What the panel shows overall. */
export type GpuStatus = 'loading' | 'live' | 'paused' | 'error';

/** Options of one GPU API call. */
export interface IGpuFetchOptions {
  /** Only samples newer than this (unix seconds); `null` for the whole window. */
  since: number | null;
  /** `true`: `POST gpu/refresh` (sample now); `false`: `GET gpu`. */
  refresh: boolean;
}

/** A function that calls the GPU API (injectable for tests). */
export type GpuFetcher = (options: IGpuFetchOptions) => Promise<IGpuPayload>;

/** The real GPU API: `GET air/api/gpu` or `POST air/api/gpu/refresh`. */
export const fetchGpu: GpuFetcher = ({ since, refresh }) => {
  const query = since === null ? '' : `?since=${encodeURIComponent(since)}`;
  return requestAPI<IGpuPayload>((refresh ? 'gpu/refresh' : 'gpu') + query, {
    method: refresh ? 'POST' : 'GET'
  });
};

/**
 * Merge new samples into a history (both oldest first): de-duplicated by `t` (the incoming
 * sample wins) and sorted. The common case, all new samples after the existing ones, is a concat.
 */
export function mergeSamples(
  existing: readonly ISample[],
  incoming: readonly ISample[]
): ISample[] {
  const fresh = incoming.filter(s => s && Number.isFinite(s.t));
  if (fresh.length === 0) {
    return existing.slice();
  }
  const last = existing.length ? existing[existing.length - 1].t : -Infinity;
  let ordered = true;
  let previous = last;
  for (const sample of fresh) {
    if (sample.t <= previous) {
      ordered = false;
      break;
    }
    previous = sample.t;
  }
  if (ordered) {
    return existing.concat(fresh);
  }
  const byTime = new Map<number, ISample>();
  for (const sample of existing) {
    byTime.set(sample.t, sample);
  }
  for (const sample of fresh) {
    byTime.set(sample.t, sample);
  }
  return Array.from(byTime.values()).sort((a, b) => a.t - b.t);
}

/** Drop the samples older than `windowS` before the newest one. */
export function trimSamples(samples: ISample[], windowS: number): ISample[] {
  if (samples.length === 0 || !(windowS > 0)) {
    return samples;
  }
  const horizon = samples[samples.length - 1].t - windowS;
  let first = 0;
  while (first < samples.length && samples[first].t < horizon) {
    first++;
  }
  return first === 0 ? samples : samples.slice(first);
}

/** A positive number from the server, or the default. */
function positive(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0
    ? value
    : fallback;
}

/** The GPU telemetry state behind one GPU Resources panel. */
export class GpuModel implements IDisposable {
  constructor(options: GpuModel.IOptions = {}) {
    this._fetcher = options.fetch ?? fetchGpu;
    this._now = options.now ?? (() => Date.now());
    this._timers = options.timers ?? windowTimers;
    this._lastActivity = this._now();
  }

  /** Emitted after every change of data or state. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The merged history, oldest first, within `history_s` of the newest sample. */
  get samples(): readonly ISample[] {
    return this._samples;
  }

  /** Incremented whenever `samples` changes (so views can skip unchanged charts). */
  get samplesVersion(): number {
    return this._samplesVersion;
  }

  /** The last answer of the server (its `samples` is only what that answer carried). */
  get payload(): IGpuPayload | null {
    return this._payload;
  }

  /** The newest sample, with its processes; `null` before the first sample. */
  get latest(): ISample | null {
    return this._payload?.latest ?? null;
  }

  /** 'loading' before the first answer, 'paused' when idle, 'error' after a failed call. */
  get status(): GpuStatus {
    if (this._paused) {
      return 'paused';
    }
    if (this._error !== null) {
      return 'error';
    }
    return this._payload ? 'live' : 'loading';
  }

  /** The message of the last failed call, `null` once a call succeeds. */
  get error(): string | null {
    return this._error;
  }

  /** Whether the model is polling (the panel is shown). */
  get isStarted(): boolean {
    return this._started;
  }

  /** Whether a call is in flight. */
  get isBusy(): boolean {
    return this._inFlight > 0;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Seconds between polls (from the server). */
  get intervalS(): number {
    return positive(this._payload?.interval_s, DEFAULT_INTERVAL_S);
  }

  /** Seconds without activity before polling pauses (from the server). */
  get idleTimeoutS(): number {
    return positive(this._payload?.idle_timeout_s, DEFAULT_IDLE_TIMEOUT_S);
  }

  /** Seconds of history kept (from the server). */
  get historyS(): number {
    return positive(this._payload?.history_s, DEFAULT_HISTORY_S);
  }

  /**
   * Age of the newest sample in seconds, now: the server's `now - latest.t` at answer time plus
   * the time elapsed here since (so clock skew between browser and server does not matter).
   */
  secondsSinceUpdate(): number | null {
    const payload = this._payload;
    if (!payload || !payload.latest || this._fetchedAt === null) {
      return null;
    }
    const age = payload.now - payload.latest.t;
    const elapsed = (this._now() - this._fetchedAt) / 1000;
    return Math.max(0, age + elapsed);
  }

  /** Start polling (the panel is shown): counts as activity, fetches now. */
  start(): void {
    if (this._isDisposed || this._started) {
      return;
    }
    this._started = true;
    this._wake();
  }

  /** Stop polling (the panel is hidden): no more requests until `start()`. */
  stop(): void {
    if (!this._started) {
      return;
    }
    this._started = false;
    this._clearTimer();
  }

  /** The user did something: postpones the idle pause. */
  noteActivity(): void {
    this._lastActivity = this._now();
  }

  /** Leave the idle pause: fetch now and poll again. */
  resume(): void {
    if (this._isDisposed) {
      return;
    }
    this._wake();
  }

  /** Ask the server to sample now (`POST gpu/refresh`) and merge the answer. */
  async refresh(): Promise<void> {
    if (this._isDisposed) {
      return;
    }
    this._lastActivity = this._now();
    if (this._paused) {
      this._paused = false;
      this._changed.emit();
    }
    await this._fetch(true);
    if (this._started) {
      this._nextPollAt = this._now() + this.intervalS * 1000;
      this._schedule();
    }
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._started = false;
    this._clearTimer();
    Signal.clearData(this);
  }

  /** Activity now, out of the idle pause, the next poll due at once (now, when started). */
  private _wake(): void {
    this._lastActivity = this._now();
    const wasPaused = this._paused;
    this._paused = false;
    this._nextPollAt = 0;
    if (wasPaused) {
      this._changed.emit();
    }
    if (this._started) {
      this._schedule(0);
    }
  }

  /** One poll: pause if idle, wait if it is not time yet, else fetch. */
  private async _tick(): Promise<void> {
    if (!this._started || this._paused || this._isDisposed) {
      return;
    }
    const now = this._now();
    if (now - this._lastActivity >= this.idleTimeoutS * 1000) {
      this._paused = true;
      this._clearTimer();
      this._changed.emit();
      return;
    }
    if (now < this._nextPollAt) {
      this._schedule();
      return;
    }
    // nothing else may poll while this one is in flight
    this._nextPollAt = Infinity;
    await this._fetch(false);
    this._nextPollAt = this._now() + this.intervalS * 1000;
    this._schedule();
  }

  /**
   * Arm the single timer: for the next poll or the idle deadline, whichever comes first
   * (so the pause happens on time, not up to an interval late).
   */
  private _schedule(delay?: number): void {
    this._clearTimer();
    if (!this._started || this._paused || this._isDisposed) {
      return;
    }
    if (delay === undefined) {
      if (this._nextPollAt === Infinity) {
        return; // a poll is in flight; it schedules the next one
      }
      const idleAt = this._lastActivity + this.idleTimeoutS * 1000;
      delay = Math.max(0, Math.min(this._nextPollAt, idleAt) - this._now());
    }
    this._timer = this._timers.setTimeout(() => {
      this._timer = null;
      void this._tick();
    }, delay);
  }

  private _clearTimer(): void {
    if (this._timer !== null) {
      this._timers.clearTimeout(this._timer);
      this._timer = null;
    }
  }

  /** One call, serialised after any call in flight; merges the answer or records the error. */
  private _fetch(refresh: boolean): Promise<void> {
    const run = async (): Promise<void> => {
      if (this._isDisposed) {
        return;
      }
      const since = this._samples.length
        ? this._samples[this._samples.length - 1].t
        : null;
      this._inFlight++;
      try {
        const payload = await this._fetcher({ since, refresh });
        if (this._isDisposed) {
          return;
        }
        this._apply(payload, since);
        this._error = null;
      } catch (error) {
        if (this._isDisposed) {
          return;
        }
        this._error =
          error instanceof APIError && error.status
            ? `${error.message} (HTTP ${error.status})`
            : error instanceof Error
              ? error.message
              : String(error);
      } finally {
        this._inFlight--;
      }
      this._changed.emit();
    };
    const next = this._queue.then(run, run);
    this._queue = next;
    return next;
  }

  /** Take in one answer of the server. */
  private _apply(payload: IGpuPayload, since: number | null): void {
    this._payload = payload;
    this._fetchedAt = this._now();
    const incoming = Array.isArray(payload.samples) ? payload.samples : [];
    let merged =
      since === null
        ? mergeSamples([], incoming)
        : mergeSamples(this._samples, incoming);
    if (payload.latest && Number.isFinite(payload.latest.t)) {
      const newest = merged.length ? merged[merged.length - 1].t : -Infinity;
      if (payload.latest.t > newest) {
        merged = mergeSamples(merged, [payload.latest]);
      }
    }
    merged = trimSamples(merged, this.historyS);
    if (!sameSamples(merged, this._samples)) {
      this._samples = merged;
      this._samplesVersion++;
    }
  }

  private readonly _changed = new Signal<this, void>(this);
  private readonly _fetcher: GpuFetcher;
  private readonly _now: () => number;
  private readonly _timers: ITimers;
  private _samples: ISample[] = [];
  private _samplesVersion = 0;
  private _payload: IGpuPayload | null = null;
  private _fetchedAt: number | null = null;
  private _error: string | null = null;
  private _started = false;
  private _paused = false;
  private _lastActivity: number;
  private _nextPollAt = 0;
  private _timer: unknown = null;
  private _inFlight = 0;
  private _queue: Promise<void> = Promise.resolve();
  private _isDisposed = false;
}

/** Whether two histories hold the same sample objects. */
function sameSamples(a: readonly ISample[], b: readonly ISample[]): boolean {
  if (a.length !== b.length) {
    return false;
  }
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) {
      return false;
    }
  }
  return true;
}

export namespace GpuModel {
  export interface IOptions {
    /** Calls the GPU API; defaults to the real server. */
    fetch?: GpuFetcher;
    /** Milliseconds clock; defaults to `Date.now`. */
    now?: () => number;
    /** Timer functions; default to the window's. */
    timers?: ITimers;
  }
}
