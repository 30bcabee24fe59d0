/**
 * What the Experiment panel says instead of runs: open a notebook, loading, MLflow starting,
 * unreachable (where and why) or disabled, a failure to load, no runs (with the status filter).
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { statusLabel } from '../common/status';
import { startingTitle } from '../mlflow/format';
import { ExperimentsModel } from './model';

/** The line that says what the panel shows instead of runs, `null` with runs. */
export function stateMessage(
  trans: TranslationBundle,
  model: ExperimentsModel
): string | null {
  const mlflow = model.mlflow;
  const name = model.experimentName ?? trans.__('this experiment');
  switch (model.state) {
    case 'no-notebook':
      return trans.__('Open a notebook to see its experiment');
    case 'loading':
      return trans.__('Loading runs…');
    case 'starting':
      return startingTitle(trans, mlflow);
    case 'unreachable': {
      const where = mlflow?.tracking_uri;
      const why =
        mlflow?.error ||
        (mlflow?.state === 'stopped'
          ? trans.__('the tracking server is stopped')
          : '');
      if (where && why) {
        return trans.__('MLflow unreachable at %1: %2', where, why);
      }
      if (where || why) {
        return where
          ? trans.__('MLflow unreachable at %1', where)
          : trans.__('MLflow unreachable: %1', why);
      }
      return trans.__('MLflow unreachable');
    }
    case 'disabled':
      return trans.__('MLflow is disabled on this server');
    case 'error':
      return trans.__('Cannot load runs: %1', model.error);
    case 'empty':
      return model.filter === 'ALL'
        ? trans.__('No runs yet in %1', name)
        : trans.__(
            'No %1 runs in %2',
            statusLabel(trans, model.filter).toLowerCase(),
            name
          );
    default:
      return null;
  }
}
