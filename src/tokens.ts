/**
 * The services jupyter-air's plugins share, as Lumino tokens: a plugin `provides` one and the
 * others `requires` (or take as `optional`) it, instead of importing a module-level object.
 */
import { Token } from '@lumino/coreutils';
import { ISignal } from '@lumino/signaling';

import { IMlflowStatus } from './mlflow/types';

/**
 * The last known state of the MLflow tracking server (`GET air/api/mlflow`), shared by the MLflow
 * tab's command, the Experiment panel (whose runs answers carry it too) and run displays.
 *
 * The MLflow tab's command reads `latest` synchronously to decide, within the user's click,
 * whether the UI must open in a browser tab (a foreign origin): a `window.open` after an await
 * may be blocked.
 */
export interface IMlflowStatusStore {
  /** Emitted when a new status arrives. */
  readonly changed: ISignal<IMlflowStatusStore, IMlflowStatus>;
  /** The last status the server gave, `null` before any. */
  readonly latest: IMlflowStatus | null;
  /** Take a status that came with another answer (runs, experiments). */
  update(status: IMlflowStatus | null | undefined): void;
  /** Ask the server (`GET air/api/mlflow`) and remember the answer. */
  fetch(): Promise<IMlflowStatus>;
}

/** The MLflow status service (plugin `jupyter-air:mlflow-status`). */
export const IMlflowStatusStore = new Token<IMlflowStatusStore>(
  'jupyter-air:IMlflowStatusStore',
  'The last known state of the MLflow tracking server jupyter-air uses, and where its UI is.'
);
