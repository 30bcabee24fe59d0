/**
 * The logs query of the jupyter-air API (`…/logs?node=…&level=…&q=…`): the filters of a logs view,
 * the cursors of one page call, and their query string. Plain TypeScript with no JupyterLab
 * import, so that a page outside JupyterLab (the Logs tab on MLflow's run page) builds the same
 * queries as the Logs view.
 */
import { LOG_LEVELS, LogLevel } from './types';

/** The filters of the Logs view (what a download also takes). */
export interface ILogFilters {
  node: number;
  /** `null`: the latest attempt (and following into later ones). */
  attempt: number | null;
  /** The levels shown; all three (or none) send no level filter. */
  levels: readonly LogLevel[];
  /** Text the lines contain (any case); `''` for none. */
  q: string;
  /** Unix seconds, inclusive; `null` for none. */
  since: number | null;
  /** Unix seconds, exclusive; `null` for none. */
  until: number | null;
}

/** Filters of a fresh view: node 0, the latest attempt, every level, no text or time range. */
export function defaultFilters(): ILogFilters {
  return {
    node: 0,
    attempt: null,
    levels: [...LOG_LEVELS],
    q: '',
    since: null,
    until: null
  };
}

/** Whether a call failed because it was aborted (a long-poll no longer needed). */
export function isAbort(error: unknown): boolean {
  return (
    (error instanceof Error && error.name === 'AbortError') ||
    (typeof DOMException !== 'undefined' &&
      error instanceof DOMException &&
      error.name === 'AbortError')
  );
}

/** What one page call asks for besides the filters. */
export interface ILogsCursor {
  after?: string;
  before?: string;
  tail?: boolean;
  limit: number;
  /** Long-poll: seconds the server may wait for a line after `after`. */
  wait?: number;
}

/** The filter part of a logs query string. */
export function filterParams(filters: ILogFilters): URLSearchParams {
  const params = new URLSearchParams();
  params.set('node', String(filters.node));
  if (filters.attempt !== null) {
    params.set('attempt', String(filters.attempt));
  }
  const levels = LOG_LEVELS.filter(level => filters.levels.includes(level));
  if (levels.length > 0 && levels.length < LOG_LEVELS.length) {
    params.set('level', levels.join(','));
  }
  if (filters.q) {
    params.set('q', filters.q);
  }
  if (filters.since !== null) {
    params.set('since', String(filters.since));
  }
  if (filters.until !== null) {
    params.set('until', String(filters.until));
  }
  return params;
}

/** The query string of a page call. */
export function logsQueryString(
  filters: ILogFilters,
  cursor: ILogsCursor
): string {
  const params = filterParams(filters);
  if (cursor.after !== undefined) {
    params.set('after', cursor.after);
  }
  if (cursor.before !== undefined) {
    params.set('before', cursor.before);
  }
  if (cursor.tail) {
    params.set('tail', '1');
  }
  params.set('limit', String(cursor.limit));
  if (cursor.wait !== undefined && cursor.wait > 0) {
    params.set('wait', String(cursor.wait));
  }
  return params.toString();
}
