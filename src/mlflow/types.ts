/**
 * The MLflow parts of the jupyter-air API (see docs/mlflow.md), generated from the server's
 * models (`src/api/models.ts`), and the run display MIME bundle.
 *
 * Everything here comes from a server or a kernel: views treat every field as possibly missing or
 * of the wrong type (see `asRunDisplay`), and never parse any of it as HTML.
 */

/** The MIME type of a run display in cell outputs. */
export const RUN_MIME_TYPE = 'application/vnd.jupyter-air.run+json';

import { RUN_STATUSES as MLFLOW_RUN_STATUSES, RunStatus } from '../api/models';

export type {
  IExperiment,
  IExperimentRef,
  IExperimentsPayload,
  IMlflowRunLinks as IRunLinks,
  IMlflowStatus,
  IRunPayload,
  IRunSummary as IRun,
  IRunsPayload,
  MlflowState,
  RunStatus
} from '../api/models';

/** The run statuses the Experiment panel filters on (every one but SCHEDULED). */
export const RUN_STATUSES: readonly RunStatus[] = MLFLOW_RUN_STATUSES.filter(
  status => status !== 'SCHEDULED'
);

/** The payload of a run display (`application/vnd.jupyter-air.run+json`), normalised. */
export interface IRunDisplay {
  run_id: string;
  run_name: string;
  /** An MLflow run status, as the kernel wrote it (upper case). */
  status: string;
  experiment_id: string;
  experiment_name: string;
  parent_run_id: string | null;
  resumed: boolean;
  start_time: number | null;
  end_time: number | null;
  links: {
    run: string | null;
    system_metrics: string | null;
    experiment: string | null;
  };
  ui: string | null;
  /** Why there is no `ui` (e.g. a tracking store without a web UI). */
  no_ui_reason: string | null;
  /** The job run when the run is an attempt of a workload (absent otherwise, or from older kernels). */
  job_id?: string | null;
  /** The attempt of that job run (1, 2, …). */
  attempt?: number | null;
}

function str(value: unknown): string {
  return typeof value === 'string'
    ? value
    : typeof value === 'number' && Number.isFinite(value)
      ? String(value)
      : '';
}

function optStr(value: unknown): string | null {
  const s = str(value);
  return s ? s : null;
}

function optNum(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/**
 * A run display from MIME data of unknown shape (a kernel, or a notebook file, wrote it): every
 * field typed, missing ones empty.
 */
export function asRunDisplay(data: unknown): IRunDisplay {
  const d = (data && typeof data === 'object' ? data : {}) as Record<
    string,
    unknown
  >;
  const links = (
    d.links && typeof d.links === 'object' ? d.links : {}
  ) as Record<string, unknown>;
  return {
    run_id: str(d.run_id),
    run_name: str(d.run_name),
    status: str(d.status).toUpperCase(),
    experiment_id: str(d.experiment_id),
    experiment_name: str(d.experiment_name),
    parent_run_id: optStr(d.parent_run_id),
    resumed: d.resumed === true,
    start_time: optNum(d.start_time),
    end_time: optNum(d.end_time),
    links: {
      run: optStr(links.run),
      system_metrics: optStr(links.system_metrics),
      experiment: optStr(links.experiment)
    },
    ui: optStr(d.ui),
    no_ui_reason: optStr(d.no_ui_reason),
    job_id: optStr(d.job_id),
    attempt: optNum(d.attempt)
  };
}
