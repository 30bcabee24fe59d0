/**
 * A model that polls the server while its view is shown.
 *
 * The Experiment panel, the Workloads list and a job run's page each have the same lifecycle
 * around a `Poller`: a change signal, start when shown / stop when hidden, refresh, dispose, and
 * "ask now, but only if shown" after a change of query. They extend this and say what one poll
 * does (`poll`: a rejection backs the next one off) and when the next one comes (`nextDelay`).
 */
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { Poller } from './poller';

export abstract class PolledModel implements IDisposable {
  /** `name`: the poll's name in the console (`jupyter-air:workloads`). */
  constructor(name: string) {
    this.poller = new Poller({
      name,
      poll: () => this.poll(),
      interval: () => this.nextDelay()
    });
  }

  /** Emitted after every change of data or state. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Whether it polls (its view is shown). */
  get isStarted(): boolean {
    return this.poller.isStarted;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Milliseconds until the next poll while shown; `null`: no more polls. */
  abstract nextDelay(): number | null;

  /** Start polling (the view is shown): asks now. */
  start(): void {
    if (!this._isDisposed) {
      this.poller.start();
    }
  }

  /** Stop polling (the view is hidden): nothing is sent until `start()`. */
  stop(): void {
    this.poller.stop();
  }

  /** Ask now. */
  refresh(): Promise<void> {
    return this.poller.refresh();
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this.poller.dispose();
    Signal.clearData(this);
  }

  /**
   * One call to the server, then `_changed.emit()` (dropped when the query changed meanwhile).
   * A failure is recorded for the view, then rethrown: the next poll backs off.
   */
  protected abstract poll(): Promise<void>;

  /** Ask now when shown; when hidden, `start()` asks (nothing is sent while hidden). */
  protected refreshIfShown(): void {
    if (this.poller.isStarted) {
      void this.poller.refresh();
    }
  }

  protected readonly poller: Poller;
  protected readonly _changed = new Signal<this, void>(this);
  private _isDisposed = false;
}
