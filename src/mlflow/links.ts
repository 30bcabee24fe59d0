/**
 * URLs of the MLflow UI, from data a kernel or a notebook file supplied: only `http(s)` URLs and
 * paths are ever put in an `href` or an iframe, and only `#…` fragments are appended to them.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { IMlflowStatus } from './types';

/** The embedded MLflow UI on this Jupyter server: `<base_url>air/mlflow/`. */
export function defaultUiUrl(
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): string {
  return URLExt.join(settings.baseUrl, 'air/mlflow/');
}

/** The page's URL (what relative UI paths resolve against). */
function pageHref(): string {
  return typeof window !== 'undefined'
    ? window.location.href
    : 'http://localhost/';
}

/**
 * The UI URL when it is safe to link to: an absolute `http(s)` URL or a path (`/user/a/air/mlflow/`);
 * `null` for anything else (`javascript:`, `data:`, garbage).
 */
export function safeUiUrl(ui: string | null | undefined): string | null {
  if (typeof ui !== 'string' || !ui.trim()) {
    return null;
  }
  const value = ui.trim();
  let url: URL;
  try {
    url = new URL(value, pageHref());
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return null;
  }
  // a scheme-less value must be a path: 'foo:bar' parses as a scheme, 'air/mlflow' is relative
  if (!/^https?:\/\//i.test(value) && !value.startsWith('/')) {
    return null;
  }
  return value;
}

/** A UI fragment (`#/experiments/1/runs/abc`), or `null` when it is not a fragment. */
export function safeFragment(fragment: unknown): string | null {
  if (typeof fragment !== 'string' || !fragment.startsWith('#')) {
    return null;
  }
  // no whitespace or control characters: a fragment is one URL component
  // eslint-disable-next-line no-control-regex
  return /[\s\u0000-\u001f\u007f]/.test(fragment) ? null : fragment;
}

/** The UI URL with a fragment (the UI's own URL when there is none); `null` if unsafe. */
export function uiLink(
  ui: string | null | undefined,
  fragment?: string | null
): string | null {
  const base = safeUiUrl(ui);
  if (base === null) {
    return null;
  }
  const hash = safeFragment(fragment);
  const withoutHash = base.split('#')[0];
  return hash ? withoutHash + hash : base;
}

/** Whether a UI URL is on another origin than the page (it may refuse to be framed). */
export function isForeignUrl(
  url: string,
  origin: string = typeof window !== 'undefined'
    ? window.location.origin
    : 'http://localhost'
): boolean {
  try {
    return new URL(url, origin + '/').origin !== origin;
  } catch {
    return true;
  }
}

/** The UI URL of a status: the server's, or the embedded default when it is ready without one. */
export function statusUiUrl(status: IMlflowStatus): string | null {
  const ui = safeUiUrl(status.ui);
  if (ui !== null) {
    return ui;
  }
  return status.state === 'ready' ? defaultUiUrl() : null;
}
