/**
 * The workloads part of the jupyter-air API (`air/api/workloads`, see docs/workloads.md): job
 * runs, their attempts and nodes.
 *
 * Everything here comes from the server, about commands users wrote: views treat every field as
 * possibly missing and show all of it as text.
 */

/** The statuses of a job run, in the order of its life. */
export const JOB_STATUSES = [
  'PENDING',
  'RUNNING',
  'SUCCEEDED',
  'FAILED',
  'CANCELLED'
] as const;

export type JobStatus = (typeof JOB_STATUSES)[number];

/** Statuses of a job run that is not over yet (polled faster, can be cancelled, followed). */
export const ACTIVE_STATUSES: readonly string[] = ['PENDING', 'RUNNING'];

/** Whether a job (or attempt) status means it may still change. */
export function isActiveStatus(status: unknown): boolean {
  return typeof status === 'string' && ACTIVE_STATUSES.includes(status);
}

/** What a job run asks for, per node. */
export interface ICompute {
  num_accelerators?: number;
  accelerator_type?: string;
  num_nodes?: number;
}

/** One node's process of an attempt. */
export interface IJobNode {
  node: number;
  pid: number | null;
  gpus: unknown;
  exit_code: number | null;
  signal: string | number | null;
}

/** Links of an attempt: absolute paths or URLs into the MLflow UI (`/…/air/mlflow/#/…`). */
export interface IAttemptLinks {
  run?: string;
  system_metrics?: string;
  experiment?: string;
}

/** One attempt of a job run (the first, or a retry), with its MLflow run. */
export interface IAttempt {
  attempt: number;
  status: string;
  reason: string | null;
  exit_code: number | null;
  signal: string | number | null;
  timed_out: boolean | null;
  mlflow_run_id: string | null;
  /** unix seconds */
  started_at: number | null;
  ended_at: number | null;
  duration_s: number | null;
  nodes: IJobNode[];
  links: IAttemptLinks;
}

/** A job run (`GET air/api/workloads/{id}` adds `spec_yaml`). */
export interface IJob {
  id: string;
  status: JobStatus | string;
  reason: string | null;
  finished: boolean;
  experiment_name: string | null;
  experiment_id: string | null;
  run_name: string | null;
  command: string | string[] | null;
  compute: ICompute;
  gpus: unknown;
  max_retries: number | null;
  timeout_minutes: number | null;
  working_dir: string | null;
  spec_path: string | null;
  source: string | null;
  notebook: string | null;
  user: string | null;
  /** unix seconds */
  submitted_at: number | null;
  started_at: number | null;
  ended_at: number | null;
  duration_s: number | null;
  cancel_requested: boolean;
  logs_purged: boolean;
  attempts: IAttempt[];
  links: { job?: string; experiment?: string };
  /** The workload YAML as submitted (job page only; `null` for a cell run by `%%air_run`). */
  spec_yaml?: string | null;
}

/** `GET air/api/workloads?status=…&experiment=…&limit=…&offset=…`: newest first. */
export interface IWorkloadsPage {
  workloads: IJob[];
  total: number;
  limit: number;
  offset: number;
}
