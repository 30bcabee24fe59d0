/**
 * The one way the frontend talks to the jupyter-air server extension.
 *
 * URLs are built from the server settings' base URL and requests go through
 * `ServerConnection.makeRequest`, so the token/XSRF headers and JupyterHub's `/user/<name>/`
 * prefix work without any special casing. Errors carry the HTTP status and the server's message,
 * and `describeError` is how every view words a failed call.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** The API namespace of jupyter-air under the server's base URL. */
export const API_NAMESPACE = 'air/api';

/** A failed API call: `status` is the HTTP status (0 when the server could not be reached). */
export class APIError extends Error {
  constructor(
    readonly status: number,
    message: string
  ) {
    super(message);
    this.name = 'APIError';
  }
}

/**
 * The full URL of an API path (which may carry a query string, e.g. `gpu?since=12.5`).
 */
export function apiURL(
  path: string,
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): string {
  const q = path.indexOf('?');
  const route = q < 0 ? path : path.slice(0, q);
  const query = q < 0 ? '' : path.slice(q);
  return URLExt.join(settings.baseUrl, API_NAMESPACE, route) + query;
}

/**
 * Call the jupyter-air API and decode its JSON answer.
 *
 * @param path - path under `air/api`, with an optional query string
 * @param init - fetch options (method, body…)
 * @param settings - server settings (defaults to the page's)
 * @throws {APIError} on a network failure or a non-2xx answer, with the server's message
 */
export async function requestAPI<T>(
  path: string,
  init: RequestInit = {},
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<T> {
  const url = apiURL(path, settings);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new APIError(0, `Cannot reach the Jupyter server: ${reason}`);
  }
  const text = await response.text();
  if (!response.ok) {
    throw new APIError(response.status, errorMessage(response, text));
  }
  if (!text) {
    return undefined as T;
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new APIError(
      response.status,
      `Invalid JSON from ${url.split('?')[0]}: ${text.slice(0, 100)}`
    );
  }
}

/** The message of an error answer: tornado's `{message}`, else the status line. */
function errorMessage(response: Response, text: string): string {
  try {
    const body = JSON.parse(text);
    if (body && typeof body.message === 'string' && body.message) {
      return body.message;
    }
    if (body && typeof body.reason === 'string' && body.reason) {
      return body.reason;
    }
  } catch {
    // not JSON: fall through
  }
  const status = `${response.status} ${response.statusText}`.trim();
  return `Request failed (${status})`;
}

/** The text of a failed call: the server's message, with the HTTP status when there was one. */
export function describeError(error: unknown): string {
  if (error instanceof APIError) {
    return error.status
      ? `${error.message} (HTTP ${error.status})`
      : error.message;
  }
  return error instanceof Error ? error.message : String(error);
}
