/**
 * The workloads calls of the jupyter-air API, through `requestAPI` (base URL, token, XSRF).
 */
import { requestAPI } from '../api';
import { ISchedule, ISchedulesPage } from '../api/models';
import { IJob, IWorkloadsPage } from './types';

/** What `air/api/workloads` is asked for. */
export interface IWorkloadsQuery {
  /** Only job runs with one of these statuses (none: every status). */
  status?: readonly string[];
  /** Only job runs of this experiment (its name). */
  experiment?: string | null;
  limit: number;
  offset: number;
}

/** The query string of a list call (`status=PENDING%2CRUNNING&limit=50&offset=0`). */
export function workloadsQueryString(query: IWorkloadsQuery): string {
  const params = new URLSearchParams();
  if (query.status && query.status.length > 0) {
    params.set('status', query.status.join(','));
  }
  if (query.experiment) {
    params.set('experiment', query.experiment);
  }
  params.set('limit', String(query.limit));
  params.set('offset', String(query.offset));
  return params.toString();
}

/** The API path of a job run (`workloads/3f2a9c1b0d4e`). */
export function jobPath(id: string): string {
  return `workloads/${encodeURIComponent(id)}`;
}

/** `GET air/api/workloads?…`: a page of job runs, newest first. */
export function fetchWorkloads(
  query: IWorkloadsQuery
): Promise<IWorkloadsPage> {
  return requestAPI<IWorkloadsPage>(`workloads?${workloadsQueryString(query)}`);
}

/** `GET air/api/workloads/{id}`: a job run with its YAML. */
export function fetchJob(id: string): Promise<IJob> {
  return requestAPI<IJob>(jobPath(id));
}

/**
 * `POST air/api/workloads/{id}/cancel`: asks for the cancellation and answers at once with the
 * job run (`cancel_requested`, still stopping: follow it with `fetchJob`).
 */
export function cancelJob(id: string): Promise<IJob> {
  return requestAPI<IJob>(`${jobPath(id)}/cancel`, { method: 'POST' });
}

/** `GET air/api/schedules`: every schedule, with its next firing and last runs. */
export function fetchSchedules(): Promise<ISchedulesPage> {
  return requestAPI<ISchedulesPage>('schedules');
}

/** `POST air/api/schedules/{id}/pause` (or `/resume`): the schedule as it is now. */
export function setSchedulePaused(
  id: string,
  paused: boolean
): Promise<ISchedule> {
  const action = paused ? 'pause' : 'resume';
  return requestAPI<ISchedule>(
    `schedules/${encodeURIComponent(id)}/${action}`,
    { method: 'POST' }
  );
}
