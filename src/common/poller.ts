/**
 * The one poll loop of the frontend, on `@lumino/polling`'s `Poll` (as JupyterLab's own panels
 * poll): the GPU panel, the Experiment panel, the Workloads list and a job run's page, the MLflow
 * tab while MLflow starts, a run display's check of a RUNNING run, a Logs view following a job,
 * and the once-a-second clocks all run one of these.
 *
 * What it adds to `Poll`:
 * - **One call at a time.** A poll asked for while one is in flight runs after it (the caller's
 *   state may have changed since the first began), never alongside.
 * - **A cadence the caller decides after each call** (`interval()`, `null` for no more), and a
 *   `refresh()` that polls now and resolves once that poll is done.
 * - **Backoff on errors that is deterministic**: after the n-th failure in a row the next poll
 *   comes `max(interval, retry) × growth^(n-1)` later, at most `maxRetry`. `Poll`'s own backoff
 *   draws a random delay that, after an immediate tick, can come sooner than the interval; the
 *   panels promise their cadence (and the tests assert it), so the delay is computed here and
 *   handed to `Poll` as its next interval.
 * - `standby` as `Poll` has it: by default nothing runs while the browser tab is hidden.
 */
import { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';

/** The growth of the delay after each failure in a row. */
export const RETRY_GROWTH = 2;
/** The longest delay after failures (ms). */
export const MAX_RETRY_MS = 5 * 60 * 1000;

export class Poller implements IDisposable {
  constructor(options: Poller.IOptions) {
    this._work = options.poll;
    const interval = options.interval;
    this._interval = typeof interval === 'function' ? interval : () => interval;
    this._retryMs = options.retryMs ?? 0;
    this._maxRetryMs = options.maxRetryMs ?? MAX_RETRY_MS;
    this._poll = new Poll({
      auto: false,
      factory: () => this._tick(),
      frequency: { interval: Poll.NEVER, backoff: false },
      name: options.name,
      standby: options.standby ?? 'when-hidden'
    });
  }

  /** Whether it polls (started and not disposed). */
  get isStarted(): boolean {
    return this._started;
  }

  get isDisposed(): boolean {
    return this._poll.isDisposed;
  }

  /** How many polls failed in a row (0 after a success). */
  get failures(): number {
    return this._failures;
  }

  /** Start polling: the first poll in `delayMs` (at once by default), then at the cadence. */
  start(delayMs = 0): void {
    if (this._started || this.isDisposed) {
      return;
    }
    this._started = true;
    if (delayMs > 0) {
      void this._poll.schedule({ interval: delayMs, phase: 'started' });
    } else {
      void this.run(this._work); // the view was just shown: no tick to wait for
    }
  }

  /** Stop polling: nothing more is sent until `start()` (a poll in flight still completes). */
  stop(): void {
    if (!this._started) {
      return;
    }
    this._started = false;
    void this._poll.stop();
  }

  /** Start or stop, by whether it should poll now. */
  setStarted(started: boolean): void {
    if (started) {
      this.start();
    } else {
      this.stop();
    }
  }

  /**
   * Poll now (also when stopped), after the poll in flight if there is one; when started, the
   * cadence goes on from this poll. Resolves when it is done (never rejects).
   */
  refresh(): Promise<void> {
    return this.run(this._work);
  }

  /**
   * Run `work` as a poll now (`refresh()` with other work: the GPU panel's Refresh samples on
   * the server): one at a time with the polls, its failure counted like theirs.
   */
  async run(work: () => void | Promise<void>): Promise<void> {
    if (this.isDisposed) {
      return;
    }
    // no tick may start while this one waits or runs; the cadence restarts from its end
    this._runs++;
    void this._poll.schedule({ interval: Poll.NEVER, phase: 'refreshed' });
    try {
      await this._serial(work);
    } finally {
      this._runs--;
    }
    if (this._runs === 0 && this._started && !this.isDisposed) {
      void this._poll.schedule({
        interval: this._nextInterval(),
        phase: this._failures ? 'rejected' : 'resolved'
      });
    }
  }

  /** Re-arm the timer from now with the current `interval()` (the caller's cadence changed). */
  reschedule(): void {
    if (!this._started || this.isDisposed || this._inFlight + this._runs > 0) {
      return; // a poll in flight re-arms the timer when it ends
    }
    void this._poll.schedule({
      interval: this._nextInterval(),
      phase: 'resolved'
    });
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._started = false;
    void this._poll.stop(); // clears the timer: a disposed Poll leaves its own pending
    this._poll.dispose();
  }

  /** One tick of the `Poll`: poll, then hand it the delay until the next one. */
  private async _tick(): Promise<void> {
    await this._serial(this._work);
    this._setFrequency(this._nextInterval());
  }

  /**
   * Run `work` after whatever poll is in flight; record whether it failed. Asking for the same
   * work again while it waits to run joins that run (many asks while one is in flight make one
   * more call after it, not many).
   */
  private _serial(work: () => void | Promise<void>): Promise<void> {
    const queued = this._queued;
    if (queued !== null && queued.work === work) {
      return queued.done;
    }
    const entry: { work: typeof work; done: Promise<void> } = {
      work,
      done: Promise.resolve()
    };
    const run = async (): Promise<void> => {
      if (this._queued === entry) {
        this._queued = null; // asks from now on wait for another run
      }
      if (this.isDisposed) {
        return;
      }
      this._inFlight++;
      try {
        await work();
        this._failures = 0;
      } catch (error) {
        this._failures++;
        // the caller shows what failed; this is for whoever reads the console
        console.debug(
          `${this._poll.name}: poll failed:`,
          error instanceof Error ? error.message : error
        );
      } finally {
        this._inFlight--;
      }
    };
    entry.done = this._queue.then(run);
    this._queued = entry;
    this._queue = entry.done;
    return entry.done;
  }

  /**
   * Milliseconds until the next poll: the caller's cadence; after failures, backed off from it
   * (or from `retryMs`, which also retries work whose cadence says none).
   */
  private _nextInterval(): number {
    const value = this._interval();
    const interval =
      value !== null && value < Poll.MAX_INTERVAL ? Math.max(0, value) : null;
    if (this._failures === 0) {
      return interval ?? Poll.NEVER;
    }
    const base = Math.max(interval ?? 0, this._retryMs);
    if (base === 0 && interval === null) {
      return Poll.NEVER;
    }
    const backoff = base * RETRY_GROWTH ** (this._failures - 1);
    return Math.min(backoff, Math.max(base, this._maxRetryMs));
  }

  /** The `Poll`'s next interval (read by it when the tick ends). */
  private _setFrequency(interval: number): void {
    if (!this.isDisposed) {
      const max = interval === Poll.NEVER ? Poll.MAX_INTERVAL : interval;
      this._poll.frequency = { interval, backoff: false, max };
    }
  }

  private readonly _work: () => void | Promise<void>;
  private readonly _interval: () => number | null;
  private readonly _retryMs: number;
  private readonly _maxRetryMs: number;
  private readonly _poll: Poll;
  private _started = false;
  private _failures = 0;
  private _inFlight = 0;
  private _runs = 0;
  private _queue: Promise<void> = Promise.resolve();
  private _queued: {
    work: () => void | Promise<void>;
    done: Promise<void>;
  } | null = null;
}

export namespace Poller {
  export interface IOptions {
    /** What the poll is, for the console (`jupyter-air:gpu`). */
    name: string;
    /** One poll; a rejection counts as a failure (the next poll backs off) and is logged. */
    poll: () => void | Promise<void>;
    /** Milliseconds from the end of a poll to the next one; `null`: none until asked. */
    interval: number | (() => number | null);
    /**
     * The least delay after a failure (a long-poll's interval is 0); work whose cadence says
     * none is retried after it too. Default 0.
     */
    retryMs?: number;
    /** The longest delay after failures; default 5 minutes. */
    maxRetryMs?: number;
    /** When to skip polls; default `'when-hidden'` (the browser tab is hidden). */
    standby?: Poll.Standby | (() => boolean | Poll.Standby);
  }
}
