/**
 * The logs calls of the jupyter-air API: pages of lines (with cursors and long-polling) through
 * `requestAPI`, and the download URL, which the browser fetches itself (a link).
 */
import { ServerConnection } from '@jupyterlab/services';

import { APIError, apiURL, requestAPI } from '../api';
import { jobPath } from '../workloads/api';
import {
  ILogFilters,
  ILogsCursor,
  filterParams,
  logsQueryString
} from './query';
import { ILogPage } from './types';

export {
  defaultFilters,
  filterParams,
  isAbort,
  logsQueryString
} from './query';
export type { ILogFilters, ILogsCursor } from './query';

/** Whether a page call failed for a reason that retrying will not fix. */
export function isFinal(error: unknown): boolean {
  return (
    error instanceof APIError &&
    (error.status === 400 || error.status === 403 || error.status === 404)
  );
}

/** `GET air/api/workloads/{id}/logs?…` (abortable: a long-poll is dropped when not needed). */
export function fetchLogs(
  jobId: string,
  filters: ILogFilters,
  cursor: ILogsCursor,
  signal?: AbortSignal
): Promise<ILogPage> {
  return requestAPI<ILogPage>(
    `${jobPath(jobId)}/logs?${logsQueryString(filters, cursor)}`,
    signal ? { signal } : {}
  );
}

/**
 * The URL of every line matching `filters` as a file (`air/api/workloads/{id}/logs/download?…`),
 * for a link the browser follows itself: it sends the Jupyter cookie; like JupyterLab's file
 * downloads, the `_xsrf` cookie value is added when there is one, and the token when the page
 * has one (a page opened with `?token=`).
 */
export function logsDownloadUrl(
  jobId: string,
  filters: ILogFilters,
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): string {
  const params = filterParams(filters);
  let cookie = '';
  try {
    cookie = typeof document !== 'undefined' ? document.cookie : '';
  } catch {
    // a sandboxed page cannot read cookies
  }
  const xsrf = cookie.match('\\b_xsrf=([^;]*)\\b');
  if (xsrf) {
    params.set('_xsrf', xsrf[1]);
  }
  if (settings.token) {
    params.set('token', settings.token);
  }
  return apiURL(
    `${jobPath(jobId)}/logs/download?${params.toString()}`,
    settings
  );
}
