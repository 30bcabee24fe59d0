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

import { describeError } from '../api';
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

  /** The message of the last failed call, `null` once a call succeeds. */
  get error(): string | null {
    return this._error;
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

  /**
   * One call for the current query: its answer, or `null` when the model went away or the query
   * changed meanwhile (the answer is dropped). A failure for the current query is recorded
   * (`error`), emitted and rethrown: the next poll backs off.
   */
  protected async answer<T>(call: () => Promise<T>): Promise<T | null> {
    const key = this.queryKey();
    const current = () => !this._isDisposed && key === this.queryKey();
    try {
      const answer = await call();
      if (!current()) {
        return null;
      }
      this._error = null;
      return answer;
    } catch (error) {
      if (!current()) {
        return null;
      }
      this._error = describeError(error);
      this._changed.emit();
      throw error;
    }
  }

  /** What the current query is, to tell an answer to an older one apart. */
  protected abstract queryKey(): string;

  /** Ask now when shown; when hidden, `start()` asks (nothing is sent while hidden). */
  protected refreshIfShown(): void {
    if (this.poller.isStarted) {
      void this.poller.refresh();
    }
  }

  protected readonly poller: Poller;
  protected readonly _changed = new Signal<this, void>(this);
  protected _error: string | null = null;
  private _isDisposed = false;
}
