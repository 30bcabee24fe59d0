/**
 * The MLflow parts of the jupyter-air API (see docs/mlflow.md) and the run display MIME bundle.
 *
 * Everything here comes from a server or a kernel: views treat every field as possibly missing or
 * of the wrong type (see `asRunDisplay`), and never parse any of it as HTML.
 */

/** The MIME type of a run display in cell outputs. */
export const RUN_MIME_TYPE = 'application/vnd.jupyter-air.run+json';

/** The state of the tracking server jupyter-air uses. */
export type MlflowState =
  'starting' | 'ready' | 'failed' | 'stopped' | 'external' | 'disabled';

/** `GET air/api/mlflow`. */
export interface IMlflowStatus {
  state: MlflowState;
  /** `embedded` (run by jupyter-air), `external` (the user's MLFLOW_TRACKING_URI), `disabled`. */
  mode?: 'embedded' | 'external' | 'disabled';
  /** The tracking server's URI (`http://127.0.0.1:5123`, the user's own server…). */
  tracking_uri: string | null;
  /**
   * Where the browser reaches the MLflow UI: a path on the Jupyter server
   * (`/user/alice/air/mlflow/`) or an absolute http(s) URL (the user's own server).
   */
  ui: string | null;
  /** Seconds since the start began, while starting. */
  elapsed_s: number | null;
  error: string | null;
  restarts: number;
  /** How long the last start took (embedded). */
  ready_after_s?: number | null;
  /** External servers, `air/api/mlflow` only: whether its `/health` answered. */
  reachable?: boolean;
}

/** The run statuses the Experiment panel filters on (MLflow also knows SCHEDULED). */
export const RUN_STATUSES = [
  'RUNNING',
  'FINISHED',
  'FAILED',
  'KILLED'
] as const;

/** MLflow run statuses (MLflow also knows SCHEDULED). */
export type RunStatus = (typeof RUN_STATUSES)[number] | string;

/** Links of a run, as fragments relative to the MLflow UI (`#/experiments/1/runs/<id>`). */
export interface IRunLinks {
  run: string;
  system_metrics: string;
  experiment: string;
}

/** One run in `GET air/api/runs`. */
export interface IRun {
  run_id: string;
  run_name: string;
  status: RunStatus;
  /** ms since the epoch */
  start_time: number;
  /** ms since the epoch, `null` while running */
  end_time: number | null;
  parent_run_id: string | null;
  /** The workload job run this run is an attempt of, `null` otherwise. */
  job_id?: string | null;
  /** A few latest metrics. */
  metrics: { [name: string]: number };
  tags: { [key: string]: string };
  links: IRunLinks;
}

/** `GET air/api/runs/<id>`: one run (`run` is `null` while MLflow cannot answer). */
export interface IRunPayload {
  mlflow: IMlflowStatus;
  run: IRun | null;
}

/** An experiment. */
export interface IExperimentRef {
  experiment_id: string;
  name: string;
}

/** `GET air/api/runs?notebook=<path>` or `?experiment_id=<id>`. */
export interface IRunsPayload {
  mlflow: IMlflowStatus;
  experiment: IExperimentRef | null;
  /**
   * The experiment the notebook uses or would use, even if it does not exist yet (`null` for an
   * experiment id asked while MLflow cannot answer).
   */
  experiment_name: string | null;
  runs: IRun[];
  truncated: boolean;
}

/** One experiment in `GET air/api/experiments`. */
export interface IExperiment extends IExperimentRef {
  last_update_time: number | null;
}

/** `GET air/api/experiments`. */
export interface IExperimentsPayload {
  mlflow: IMlflowStatus;
  experiments: IExperiment[];
}

/** The payload of a run display (`application/vnd.jupyter-air.run+json`), normalised. */
export interface IRunDisplay {
  run_id: string;
  run_name: string;
  status: RunStatus;
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
