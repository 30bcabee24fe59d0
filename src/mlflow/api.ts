/**
 * The MLflow calls of the jupyter-air API, through `requestAPI` (base URL, token, XSRF).
 */
import { APIError, requestAPI } from '../api';
import {
  IExperimentsPayload,
  IMlflowStatus,
  IRun,
  IRunPayload,
  IRunsPayload
} from './types';

/** What `air/api/runs` is asked for: a notebook's experiment or an experiment by id. */
export interface IRunsQuery {
  /** The notebook path (its experiment, even before it exists). */
  notebook?: string;
  /** An experiment id (takes precedence over `notebook`). */
  experiment_id?: string;
  /** Only runs with this status. */
  status?: string;
  /** At most this many runs. */
  limit?: number;
}

/** The query string of a runs call (`notebook=a%2Fb.ipynb&limit=100`). */
export function runsQueryString(query: IRunsQuery): string {
  const params = new URLSearchParams();
  if (query.experiment_id) {
    params.set('experiment_id', query.experiment_id);
  } else if (query.notebook) {
    params.set('notebook', query.notebook);
  }
  if (query.status) {
    params.set('status', query.status);
  }
  if (query.limit !== undefined) {
    params.set('limit', String(query.limit));
  }
  return params.toString();
}

/** `GET air/api/mlflow`: the tracking server's state and where its UI is. */
export function fetchMlflowStatus(): Promise<IMlflowStatus> {
  return requestAPI<IMlflowStatus>('mlflow');
}

/** `GET air/api/runs?…`: the runs of a notebook's experiment or of an experiment. */
export function fetchRuns(query: IRunsQuery): Promise<IRunsPayload> {
  return requestAPI<IRunsPayload>(`runs?${runsQueryString(query)}`);
}

/**
 * The current status of a run, for a run display: `null` when this server's MLflow has no such
 * run (the display came from elsewhere); throws when MLflow cannot answer now.
 */
export async function fetchRunState(
  runId: string
): Promise<Pick<IRun, 'status' | 'end_time'> | null> {
  let payload: IRunPayload;
  try {
    payload = await requestAPI<IRunPayload>(
      `runs/${encodeURIComponent(runId)}`
    );
  } catch (error) {
    if (error instanceof APIError && error.status === 404) {
      return null;
    }
    throw error;
  }
  if (!payload.run) {
    throw new Error(`MLflow is ${payload.mlflow?.state ?? 'not answering'}`);
  }
  return { status: payload.run.status, end_time: payload.run.end_time };
}

/** `GET air/api/experiments`. */
export function fetchExperiments(): Promise<IExperimentsPayload> {
  return requestAPI<IExperimentsPayload>('experiments');
}
