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
 * - While started (the panel is shown) it polls every `interval_s` (a `Poller`: nothing while
 *   the browser tab is hidden, backing off while the server fails); stopped, it sends nothing.
 * - Without user activity for `idle_timeout_s` it stops polling and becomes 'paused' (the server
 *   then pauses its own sampling too) until `resume()`, `refresh()` or a restart. The poller
 *   wakes up at the idle deadline when it comes before the next poll, so the pause is on time.
 */
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { describeError } from '../api';
import { Poller } from '../common/poller';
import { GpuFetcher, fetchGpu } from './api';
import { mergeSamples, sameSamples, trimSamples } from './history';
import { IGpuPayload, ISample } from './types';

/** Defaults used until the server has said otherwise. */
export const DEFAULT_INTERVAL_S = 10;
export const DEFAULT_IDLE_TIMEOUT_S = 300;
export const DEFAULT_HISTORY_S = 7200;

/** What the panel shows overall. */
export type GpuStatus = 'loading' | 'live' | 'paused' | 'error';

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
    this._lastActivity = this._now();
    this._poller = new Poller({
      name: 'jupyter-air:gpu',
      poll: () => this._tick(),
      interval: () => this._untilNextTick()
    });
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

  /** Whether it waits on the server that failed (`failures` calls in a row, backing off). */
  get failures(): number {
    return this._poller.failures;
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
    this._poller.stop();
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
    if (this._started) {
      this._poller.start(); // out of the pause: polls again after this one
    }
    await this._poller.run(async () => {
      await this._fetch(true);
      this._nextPollAt = this._now() + this.intervalS * 1000;
    });
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._started = false;
    this._poller.dispose();
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
      this._poller.stop();
      this._poller.start();
    }
  }

  /** One tick of the poller: pause if idle, nothing if it is not time yet, else fetch. */
  private async _tick(): Promise<void> {
    if (!this._started || this._paused || this._isDisposed) {
      return;
    }
    const now = this._now();
    if (now - this._lastActivity >= this.idleTimeoutS * 1000) {
      this._paused = true;
      this._poller.stop();
      this._changed.emit();
      return;
    }
    if (now < this._nextPollAt) {
      return; // woken for an idle deadline that activity postponed
    }
    try {
      await this._fetch(false);
    } finally {
      this._nextPollAt = this._now() + this.intervalS * 1000;
    }
  }

  /**
   * Milliseconds until the poller's next tick: the next poll or the idle deadline, whichever
   * comes first (so the pause happens on time, not up to an interval late).
   */
  private _untilNextTick(): number | null {
    if (!this._started || this._paused || this._isDisposed) {
      return null;
    }
    const idleAt = this._lastActivity + this.idleTimeoutS * 1000;
    return Math.max(0, Math.min(this._nextPollAt, idleAt) - this._now());
  }

  /** One call: merges the answer, or records the error and rethrows it (the poller backs off). */
  private async _fetch(refresh: boolean): Promise<void> {
    if (this._isDisposed) {
      return;
    }
    const since = this._samples.length
      ? this._samples[this._samples.length - 1].t
      : null;
    this._inFlight++;
    try {
      const payload = await this._fetcher({ since, refresh });
      if (!this._isDisposed) {
        this._apply(payload, since);
        this._error = null;
      }
    } catch (error) {
      if (!this._isDisposed) {
        this._error = describeError(error);
        throw error;
      }
    } finally {
      this._inFlight--;
      if (!this._isDisposed) {
        this._changed.emit();
      }
    }
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
  private readonly _poller: Poller;
  private _samples: ISample[] = [];
  private _samplesVersion = 0;
  private _payload: IGpuPayload | null = null;
  private _fetchedAt: number | null = null;
  private _error: string | null = null;
  private _started = false;
  private _paused = false;
  private _lastActivity: number;
  private _nextPollAt = 0;
  private _inFlight = 0;
  private _isDisposed = false;
}

export namespace GpuModel {
  export interface IOptions {
    /** Calls the GPU API; defaults to the real server. */
    fetch?: GpuFetcher;
    /** Milliseconds clock; defaults to `Date.now`. */
    now?: () => number;
  }
}
