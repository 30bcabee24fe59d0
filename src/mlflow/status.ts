/**
 * The MLflow status service (`IMlflowStatusStore`, see tokens.ts): the last status the server
 * gave, from `GET air/api/mlflow` or from another answer that carried it.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { IMlflowStatusStore } from '../tokens';
import { fetchMlflowStatus } from './api';
import { IMlflowStatus } from './types';

export class MlflowStatusStore implements IMlflowStatusStore {
  constructor(options: MlflowStatusStore.IOptions = {}) {
    this._fetch = options.fetch ?? fetchMlflowStatus;
  }

  get changed(): ISignal<this, IMlflowStatus> {
    return this._changed;
  }

  get latest(): IMlflowStatus | null {
    return this._latest;
  }

  update(status: IMlflowStatus | null | undefined): void {
    if (!status || typeof status !== 'object') {
      return;
    }
    this._latest = status;
    this._changed.emit(status);
  }

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
