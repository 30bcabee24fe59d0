/**
 * Polls while started, one call at a time, at a cadence the caller decides after each call.
 *
 * Used by the MLflow tab (while MLflow starts) and, through `PolledModel`, the Experiment panel,
 * the Workloads list and a job run's page; each starts it when shown and stops it when hidden,
 * so nothing is sent while hidden.
 */
import { IDisposable } from '@lumino/disposable';

import { ITimers, windowTimers } from '../common/timers';

export class Poller implements IDisposable {
  constructor(options: Poller.IOptions) {
    this._poll = options.poll;
    this._delay = options.delay;
    this._timers = options.timers ?? windowTimers;
  }

  /** Whether it polls (started and not disposed). */
  get isStarted(): boolean {
    return this._started;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Start polling: poll now, then at the cadence `delay()` says. */
  start(): void {
    if (this._started || this._isDisposed) {
      return;
    }
    this._started = true;
    void this.refresh();
  }

  /** Stop polling: nothing more is sent until `start()` (a call in flight still completes). */
  stop(): void {
    this._started = false;
    this._clear();
  }

  /**
   * Poll now (also when stopped), then reschedule when started. A call while one is in flight
   * makes one more call after it (the caller's state may have changed since it began).
   */
  refresh(): Promise<void> {
    if (this._isDisposed) {
      return Promise.resolve();
    }
    this._clear();
    if (this._running) {
      this._again = true;
      return this._running;
    }
    const run = async (): Promise<void> => {
      try {
        do {
          this._again = false;
          try {
            await this._poll();
          } catch (error) {
            console.warn('jupyter-air: poll failed', error);
          }
        } while (this._again && !this._isDisposed);
      } finally {
        this._running = null;
        this._schedule();
      }
    };
    this._running = run();
    return this._running;
  }

  /** Re-arm the timer with the current `delay()` (after the caller's cadence changed). */
  reschedule(): void {
    if (!this._running) {
      this._schedule();
    }
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this.stop();
  }

  private _schedule(): void {
    this._clear();
    if (!this._started || this._isDisposed) {
      return;
    }
    const delay = this._delay();
    if (delay === null || !Number.isFinite(delay)) {
      return;
    }
    this._timer = this._timers.setTimeout(
      () => {
        this._timer = null;
        void this.refresh();
      },
      Math.max(0, delay)
    );
  }

  private _clear(): void {
    if (this._timer !== null) {
      this._timers.clearTimeout(this._timer);
      this._timer = null;
    }
  }

  private readonly _poll: () => Promise<void>;
  private readonly _delay: () => number | null;
  private readonly _timers: ITimers;
  private _started = false;
  private _isDisposed = false;
  private _timer: unknown = null;
  private _running: Promise<void> | null = null;
  private _again = false;
}

export namespace Poller {
  export interface IOptions {
    /** One poll (errors are the caller's to record; a rejection is only logged). */
    poll: () => Promise<void>;
    /** Milliseconds until the next poll, decided after each one; `null`: no more. */
    delay: () => number | null;
    /** Timer functions; default to the window's. */
    timers?: ITimers;
  }
}
