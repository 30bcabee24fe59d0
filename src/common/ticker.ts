/**
 * A once-a-second ticker for live clocks ("updated 5 s ago", a RUNNING run's duration).
 *
 * The GPU panel, the Experiment panel and the run displays each tick only while they are shown;
 * this keeps the one interval handle (never two) and its start/stop rules in one place.
 */

export class Ticker {
  /** `tick` runs every `intervalMs` while ticking. */
  constructor(tick: () => void, intervalMs = 1000) {
    this._tick = tick;
    this._intervalMs = intervalMs;
  }

  /** Tick from now on (nothing when already ticking). */
  start(): void {
    if (this._handle === null) {
      this._handle = window.setInterval(() => this._tick(), this._intervalMs);
    }
  }

  /** Stop ticking (nothing when stopped). */
  stop(): void {
    if (this._handle !== null) {
      window.clearInterval(this._handle);
      this._handle = null;
    }
  }

  /** Start or stop, by whether it should tick now. */
  setTicking(ticking: boolean): void {
    if (ticking) {
      this.start();
    } else {
      this.stop();
    }
  }

  private readonly _tick: () => void;
  private readonly _intervalMs: number;
  private _handle: number | null = null;
}
