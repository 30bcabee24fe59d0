/**
 * The command ids of jupyter-air and how their arguments are read, in one module so views can
 * run commands without importing the plugins (src/plugins/).
 */
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';

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

/** Run command `id` for a view; a failure is logged, not thrown (the click is over). */
export function runCommand(
  commands: ICommandRunner,
  id: string,
  args: ReadonlyPartialJSONObject
): void {
  commands
    .execute(id, args)
    .catch(reason => console.warn(`jupyter-air: ${id} failed`, reason));
}

/** A string argument of a command, `undefined` when absent, empty or not a string. */
export function stringArg(
  args: ReadonlyPartialJSONObject,
  name: string
): string | undefined {
  const value = args[name];
  return typeof value === 'string' && value ? value : undefined;
}

/** A non-negative integer argument (or its digits), `undefined` when absent or not one. */
export function intArg(
  args: ReadonlyPartialJSONObject,
  name: string
): number | undefined {
  const value = args[name];
  const n = typeof value === 'string' && value ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 ? n : undefined;
}
