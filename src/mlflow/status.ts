/**
 * The last known state of the MLflow tracking server, shared by the MLflow tab, the run displays
 * and the Experiment panel (whose runs answers carry it too).
 *
 * The MLflow tab's command reads it synchronously to decide, within the user's click, whether the
 * UI must open in a browser tab (a foreign origin) — a `window.open` after an await may be blocked.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { fetchMlflowStatus } from './api';
import { IMlflowStatus } from './types';

export class MlflowStatusStore {
  constructor(options: MlflowStatusStore.IOptions = {}) {
    this._fetch = options.fetch ?? fetchMlflowStatus;
  }

  /** Emitted when a new status arrives. */
  get changed(): ISignal<this, IMlflowStatus> {
    return this._changed;
  }

  /** The last status the server gave, `null` before any. */
  get latest(): IMlflowStatus | null {
    return this._latest;
  }

  /** Take a status that came with another answer (runs, experiments). */
  update(status: IMlflowStatus | null | undefined): void {
    if (!status || typeof status !== 'object') {
      return;
    }
    this._latest = status;
    this._changed.emit(status);
  }

  /** Ask the server (`GET air/api/mlflow`) and remember the answer. */
  async fetch(): Promise<IMlflowStatus> {
    const status = await this._fetch();
    this.update(status);
    return status;
  }

  private readonly _fetch: () => Promise<IMlflowStatus>;
  private readonly _changed = new Signal<this, IMlflowStatus>(this);
  private _latest: IMlflowStatus | null = null;
}

export namespace MlflowStatusStore {
  export interface IOptions {
    /** Calls `GET air/api/mlflow`; defaults to the real server. */
    fetch?: () => Promise<IMlflowStatus>;
  }
}
