/**
 * What the MLflow tab does with a status of the tracking server: load the UI (ready, on this
 * origin), or say why not and what to do: starting (with how long and how many restarts),
 * disabled, not answering, failed or stopped, no web UI, or a UI on another server (a link).
 * A pure function of the status, so the tab (ui-view.ts) only shows what it says.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { startingTitle } from './format';
import { isForeignUrl, statusUiUrl, uiLink } from './links';
import { IMlflowStatus } from './types';

/** What the tab shows. */
export type MlflowViewState =
  | 'loading'
  | 'starting'
  | 'ready'
  | 'foreign'
  | 'no-ui'
  | 'failed'
  | 'disabled'
  | 'error';

/** A message shown instead of the UI. */
export interface IMlflowMessage {
  state: Exclude<MlflowViewState, 'ready'>;
  title: string;
  detail?: string | null;
  /** The tracking URI, to say where MLflow is. */
  uri?: string | null;
  /** Where to open the UI in a browser tab. */
  link?: string | null;
}

/** Load `url` (the UI at `ui`), or show `message`. */
export type MlflowPlan =
  { load: string; ui: string } | { message: IMlflowMessage; ui: string | null };

/**
 * What to do with `status`: `origin` is the page's (a UI elsewhere is linked, not framed),
 * `path` the UI page asked for (`#/experiments/1/runs/abc`, `null` for the start page).
 */
export function planFor(
  trans: TranslationBundle,
  status: IMlflowStatus,
  origin: string,
  path: string | null
): MlflowPlan {
  const uri = status.tracking_uri;
  const message = (m: IMlflowMessage): MlflowPlan => ({ message: m, ui: null });
  switch (status.state) {
    case 'starting':
      return message({
        state: 'starting',
        title: startingTitle(trans, status),
        detail: restartsText(trans, status)
      });
    case 'disabled':
      return message({
        state: 'disabled',
        title: trans.__('MLflow is disabled on this server'),
        detail:
          status.error ||
          trans.__(
            'No MLFLOW_TRACKING_URI is set and the embedded tracking server is turned off.'
          )
      });
    case 'ready':
      break;
    case 'external':
      if (status.reachable === false) {
        return message({
          state: 'failed',
          title: trans.__('MLflow does not answer'),
          detail:
            status.error || trans.__('Its /health endpoint did not answer.'),
          uri
        });
      }
      break;
    default:
      // failed, stopped, or a state this frontend does not know
      return message({
        state: 'failed',
        title:
          status.state === 'failed'
            ? trans.__('MLflow is not available')
            : trans.__('MLflow is not running'),
        detail: status.error || trans.__('The tracking server is not running.'),
        uri
      });
  }
  const ui = statusUiUrl(status);
  if (ui === null) {
    return message({
      state: 'no-ui',
      title: trans.__('This MLflow has no web UI to show here'),
      detail: status.error,
      uri
    });
  }
  if (isForeignUrl(ui, origin)) {
    return {
      ui,
      message: {
        state: 'foreign',
        title: trans.__('The MLflow UI is on another server'),
        detail: trans.__(
          'It may refuse to be shown inside JupyterLab: open it in a browser tab.'
        ),
        uri,
        link: uiLink(ui, path)
      }
    };
  }
  return { ui, load: uiLink(ui, path) ?? ui };
}

/** "Restarted 2 times; last error: …", `null` before any restart. */
function restartsText(
  trans: TranslationBundle,
  status: IMlflowStatus
): string | null {
  const restarts = status.restarts > 0 ? status.restarts : 0;
  if (!restarts) {
    return null;
  }
  const text = trans._n('Restarted %1 time', 'Restarted %1 times', restarts);
  return status.error
    ? trans.__('%1; last error: %2', text, status.error)
    : text;
}
