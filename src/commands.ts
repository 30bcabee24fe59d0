import { ReadonlyPartialJSONObject } from '@lumino/coreutils';

/**
 * The command ids of jupyter-air, in one module so views can run commands without importing the
 * plugins (src/index.ts).
 */
export namespace CommandIDs {
  export const openGpuResources = 'jupyter-air:open-gpu-resources';
  /** Open (or reuse and navigate) the MLflow tab; args `{path?: '#/experiments/1/runs/abc'}`. */
  export const openMlflow = 'jupyter-air:open-mlflow';
  /** Show the Experiment panel; args `{experiment_id?, run_id?}`. */
  export const openExperiments = 'jupyter-air:open-experiments';
  /** Show the Workloads panel; args `{id?}` open that job run's page. */
  export const openWorkloads = 'jupyter-air:open-workloads';
  /** Open the Logs view of a job run; args `{id, node?, attempt?}`. */
  export const openLogs = 'jupyter-air:open-logs';
}

/** Runs app commands (the app's `CommandRegistry`, or a fake in tests). */
export interface ICommandRunner {
  execute(id: string, args?: ReadonlyPartialJSONObject): Promise<any>;
}
