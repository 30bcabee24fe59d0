/**
 * `jupyter-air:mlflow-status`: the MLflow status service (`IMlflowStatusStore`) that the MLflow
 * tab, the Experiment panel and the run displays share.
 */
import { JupyterFrontEndPlugin } from '@jupyterlab/application';

import { MlflowStatusStore } from '../mlflow/status';
import { IMlflowStatusStore } from '../tokens';

export const mlflowStatusPlugin: JupyterFrontEndPlugin<IMlflowStatusStore> = {
  id: 'jupyter-air:mlflow-status',
  description:
    'The last known state of the MLflow tracking server jupyter-air uses, and where its UI is.',
  autoStart: true,
  provides: IMlflowStatusStore,
  activate: () => new MlflowStatusStore()
};
