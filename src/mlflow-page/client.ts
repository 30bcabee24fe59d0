/**
 * The calls the Logs tab makes to the Jupyter server that serves the MLflow UI: the run's logs
 * (`<base_url>air/api/runs/{run}/logs`), their download URL and the job run (for its node
 * count). Plain `fetch` with the page's cookies: the page is outside JupyterLab, so none of
 * JupyterLab's services are there.
 */
import {
  ILogFilters,
  ILogsCursor,
  filterParams,
  logsQueryString
} from '../logs/query';
import { ILogPage } from '../logs/types';
import { IJob } from '../workloads/types';

/** A call answered with an error status (or not answered: `status` 0). */
export class RunLogsError extends Error {
  constructor(
    readonly status: number,
    message: string
  ) {
    super(message);
    this.name = 'RunLogsError';
  }
}

/** `fetch`, injectable for tests. */
export type Fetch = (
  input: string,
  init?: RequestInit
) => Promise<Pick<Response, 'ok' | 'status' | 'statusText' | 'json' | 'text'>>;

/** The base URL with one trailing slash (`/`, `/user/alice/`). */
export function normalizeBase(baseUrl: string): string {
  const base = String(baseUrl || '/');
  return base.endsWith('/') ? base : `${base}/`;
}

/** The Jupyter server's base URL: the script tag says it; else what precedes `air/mlflow/`. */
export function pageBaseUrl(
  script: HTMLOrSVGScriptElement | null,
  pathname: string
): string {
  const given =
    script instanceof HTMLScriptElement ? script.dataset.baseUrl : undefined;
  if (given) {
    return normalizeBase(given);
  }
  const at = pathname.indexOf('/air/mlflow/');
  return at >= 0 ? normalizeBase(pathname.slice(0, at + 1)) : '/';
}

/** The path of a run's logs: `<base>air/api/runs/{run}/logs`. */
export function runLogsPath(baseUrl: string, runId: string): string {
  return `${normalizeBase(baseUrl)}air/api/runs/${encodeURIComponent(runId)}/logs`;
}

/** The URL of every line of the run's logs matching `filters`, as a file. */
export function runLogsDownloadUrl(
  baseUrl: string,
  runId: string,
  filters: ILogFilters
): string {
  const params = filterParams({ ...filters, attempt: null });
  return `${runLogsPath(baseUrl, runId)}/download?${params.toString()}`;
}

/** The message of an error answer (Jupyter's `{"message": …}`), else its status text. */
async function errorMessage(
  response: Pick<Response, 'status' | 'statusText' | 'json' | 'text'>
): Promise<string> {
  try {
    const body = (await response.json()) as { message?: unknown };
    if (body && typeof body.message === 'string' && body.message) {
      return body.message;
    }
  } catch {
    // not JSON
  }
  return `HTTP ${response.status} ${response.statusText || ''}`.trim();
}

async function getJson<T>(
  fetcher: Fetch,
  url: string,
  signal?: AbortSignal
): Promise<T> {
  let response;
  try {
    response = await fetcher(url, {
      credentials: 'same-origin',
      headers: { Accept: 'application/json' },
      cache: 'no-store',
      ...(signal ? { signal } : {})
    });
  } catch (error) {
    if (error instanceof Error && error.name === 'AbortError') {
      throw error;
    }
    throw new RunLogsError(0, String(error));
  }
  if (!response.ok) {
    throw new RunLogsError(response.status, await errorMessage(response));
  }
  return (await response.json()) as T;
}

/** The server calls of one page. */
export class RunLogsClient {
  constructor(
    readonly baseUrl: string,
    private readonly _fetch: Fetch = (input, init) => window.fetch(input, init)
  ) {}

  /** `GET <base>air/api/runs/{run}/logs?…` (abortable: a long-poll no longer needed). */
  logs(
    runId: string,
    filters: ILogFilters,
    cursor: ILogsCursor,
    signal?: AbortSignal
  ): Promise<ILogPage> {
    const query = logsQueryString({ ...filters, attempt: null }, cursor);
    return getJson<ILogPage>(
      this._fetch,
      `${runLogsPath(this.baseUrl, runId)}?${query}`,
      signal
    );
  }

  /** `GET <base>air/api/workloads/{id}`: the job run (its node count). */
  job(jobId: string): Promise<IJob> {
    return getJson<IJob>(
      this._fetch,
      `${normalizeBase(this.baseUrl)}air/api/workloads/${encodeURIComponent(jobId)}`
    );
  }
}
