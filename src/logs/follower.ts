/**
 * Following a job's log: one long-poll at a time for the lines after the last one held (the
 * server answers as soon as there is one, or after `wait` seconds), the next one at once, and
 * after a failure a retry that backs off. It runs on a `Poller` until `stop()`, which aborts the
 * long-poll in flight (an answer that comes anyway is dropped).
 */
import { IDisposable } from '@lumino/disposable';

import { Poller } from '../common/poller';
import { isAbort } from './api';
import { ILogPage } from './types';

export class LogsFollower implements IDisposable {
  constructor(options: LogsFollower.IOptions) {
    this._options = options;
    this._poller = new Poller({
      name: 'jupyter-air:logs-follow',
      poll: () => this._once(),
      interval: 0,
      retryMs: options.retryMs,
      standby: 'never'
    });
  }

  /** Whether it follows. */
  get isStarted(): boolean {
    return this._poller.isStarted;
  }

  get isDisposed(): boolean {
    return this._poller.isDisposed;
  }

  /** Follow from the last line held. */
  start(): void {
    this._poller.start();
  }

  /** Stop following: the long-poll in flight is aborted and its answer dropped. */
  stop(): void {
    this._poller.stop();
    this._generation++;
    this._controller?.abort();
    this._controller = null;
  }

  dispose(): void {
    this.stop();
    this._poller.dispose();
  }

  /** One long-poll, and what its answer (or failure) means. */
  private async _once(): Promise<void> {
    const generation = this._generation;
    const current = () => generation === this._generation && this.isStarted;
    const after = this._options.after();
    if (!current() || after === null) {
      return;
    }
    const controller =
      typeof AbortController !== 'undefined' ? new AbortController() : null;
    this._controller = controller;
    let page: ILogPage;
    try {
      page = await this._options.read(after, controller?.signal);
    } catch (error) {
      if (!current() || isAbort(error)) {
        return;
      }
      if (!this._options.failed(error)) {
        this._stopped();
        return;
      }
      throw error; // the poller retries, backing off
    } finally {
      if (this._controller === controller) {
        this._controller = null;
      }
    }
    if (current() && !this._options.answered(page)) {
      this._stopped();
    }
  }

  /** Following ended by itself (the log is complete, or a failure that will not go away). */
  private _stopped(): void {
    this.stop();
    this._options.stopped();
  }

  private readonly _options: LogsFollower.IOptions;
  private readonly _poller: Poller;
  private _generation = 0;
  private _controller: AbortController | null = null;
}

export namespace LogsFollower {
  export interface IOptions {
    /** The cursor after the last line held (`null`: nothing to follow from). */
    after: () => string | null;
    /** The long-poll: lines after `after` (abortable). */
    read: (after: string, signal?: AbortSignal) => Promise<ILogPage>;
    /** Take an answer; `false`: the log is complete, follow no more. */
    answered: (page: ILogPage) => boolean;
    /** Record a failure; `false`: retrying will not fix it, follow no more. */
    failed: (error: unknown) => boolean;
    /** Following ended by itself (`answered` or `failed` said so). */
    stopped: () => void;
    /** Milliseconds before the first retry after a failure. */
    retryMs: number;
  }
}
