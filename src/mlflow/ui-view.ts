/**
 * The content of the "MLflow" main-area tab: the MLflow UI in an iframe, once the tracking server
 * is ready.
 *
 * While MLflow starts it says "MLflow is starting (N s)…" and asks again every 2 s (only while the
 * tab is shown); once ready it loads the UI. A failed start shows the error and the tracking URI
 * (and is checked again every 10 s, as the server restarts MLflow). Navigating to a fragment
 * (`#/experiments/1/runs/abc`) reuses the iframe. What a status means is ui-status.ts; the tab
 * itself (one, reused) is made by ui-opener.ts.
 */
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { IFrame } from '@jupyterlab/ui-components';

import { describeError } from '../api';
import { h, newTabLink, setHidden, setText } from '../common/dom';
import { Poller } from '../common/poller';
import { ShownWidget } from '../common/shown-widget';
import { loadTranslation } from '../common/translation';
import { IMlflowStatusStore } from '../tokens';
import { safeFragment, uiLink } from './links';
import { IMlflowStatus } from './types';
import { IMlflowMessage, MlflowViewState, planFor } from './ui-status';

/** Milliseconds between status checks while MLflow starts. */
export const STARTING_POLL_MS = 2000;
/** Milliseconds between status checks after a failure. */
export const FAILED_POLL_MS = 10000;

/** The iframe's sandbox exceptions: the MLflow UI is a single-page app with forms and downloads. */
export const MLFLOW_SANDBOX: IFrame.SandboxExceptions[] = [
  'allow-scripts',
  'allow-same-origin',
  'allow-forms',
  'allow-popups',
  'allow-downloads'
];

/** The content of the MLflow tab. */
export class MlflowView extends ShownWidget {
  constructor(options: MlflowView.IOptions) {
    super();
    this.addClass('jp-air-mlflow');
    this._store = options.store;
    this._origin = options.origin ?? window.location.origin;
    const trans = (this._trans = loadTranslation(options.translator));

    this._message = h('div', 'jp-air-mlflow-message');
    this._message.setAttribute('role', 'status');
    this._title = h(
      'p',
      'jp-air-mlflow-message-title',
      trans.__('Connecting to MLflow…')
    );
    this._detail = h('p', 'jp-air-mlflow-message-detail');
    this._detail.hidden = true;
    this._uri = h('p', 'jp-air-mlflow-message-uri');
    this._uri.hidden = true;
    this._link = newTabLink(
      'jp-air-mlflow-message-link',
      trans.__('Open the MLflow UI in a browser tab')
    );
    this._link.hidden = true;
    this._message.append(this._title, this._detail, this._uri, this._link);

    this._frame = new IFrame({
      sandbox: MLFLOW_SANDBOX,
      referrerPolicy: 'same-origin'
    });
    this._frame.addClass('jp-air-mlflow-frame');
    this.iframe.title = trans.__('MLflow');
    this._frame.hide();

    this.node.append(this._message, this._frame.node);

    this._poller = new Poller({
      name: 'jupyter-air:mlflow-tab',
      poll: () => this._check(),
      interval: () => this._nextDelay()
    });
    const latest = this._store.latest;
    if (latest) {
      this._apply(latest);
    }
  }

  /** What the tab shows now. */
  get state(): MlflowViewState {
    return this._state;
  }

  /** The URL loaded in the iframe, `null` before the UI is loaded. */
  get loadedUrl(): string | null {
    return this._loadedUrl;
  }

  /** The iframe element. */
  get iframe(): HTMLIFrameElement {
    return this._frame.node.querySelector('iframe')!;
  }

  /**
   * The URL of the page shown: where the user navigated inside the UI when readable (same
   * origin), else what was loaded; the UI URL with the requested fragment before loading.
   */
  get currentUrl(): string | null {
    if (this._loadedUrl !== null) {
      try {
        const href = this.iframe.contentWindow?.location.href;
        if (href && href !== 'about:blank') {
          return href;
        }
      } catch {
        // another origin: not readable
      }
      return this._loadedUrl;
    }
    return this._ui !== null ? uiLink(this._ui, this._path) : null;
  }

  /**
   * Show a page of the UI (`#/experiments/1/runs/abc`), now if the UI is loaded, else once it is.
   * `null` keeps the page shown (or loads the UI's start page).
   */
  navigate(path: string | null | undefined): void {
    const fragment = safeFragment(path);
    if (fragment === null) {
      return;
    }
    this._path = fragment;
    if (this._loadedUrl !== null && this._ui !== null) {
      this._load(uiLink(this._ui, fragment) ?? this._ui);
    } else if (this._status !== null) {
      this._apply(this._status); // e.g. the browser-tab link now points at the fragment
    }
  }

  /** Load the UI again (the page shown, else its start page). */
  reload(): void {
    if (this._loadedUrl !== null) {
      this._load(this.currentUrl ?? this._loadedUrl);
    } else {
      void this._poller.refresh();
    }
  }

  /** Check the status now (when not loaded yet). */
  refresh(): Promise<void> {
    return this._poller.refresh();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._poller.dispose();
    this._frame.dispose();
    super.dispose();
  }

  protected onShown(): void {
    this._poller.start();
  }

  protected onHidden(): void {
    this._poller.stop();
  }

  private _nextDelay(): number | null {
    switch (this._state) {
      case 'loading':
      case 'starting':
        return STARTING_POLL_MS;
      case 'failed':
      case 'error':
        return FAILED_POLL_MS;
      default:
        return null; // loaded, foreign, no UI, disabled: nothing to wait for
    }
  }

  /** One status check (nothing once the UI is loaded); a failure backs the next one off. */
  private async _check(): Promise<void> {
    if (this._loadedUrl !== null) {
      return;
    }
    try {
      const status = await this._store.fetch();
      if (!this.isDisposed) {
        this._apply(status);
      }
    } catch (error) {
      if (!this.isDisposed) {
        this._show({
          state: 'error',
          title: this._trans.__('Cannot get the state of MLflow'),
          detail: describeError(error)
        });
        throw error;
      }
    }
  }

  /** Show what a status says, and load the UI once it is ready. */
  private _apply(status: IMlflowStatus): void {
    if (this._loadedUrl !== null) {
      return;
    }
    this._status = status;
    const plan = planFor(this._trans, status, this._origin, this._path);
    if (plan.ui !== null) {
      this._ui = plan.ui;
    }
    if ('load' in plan) {
      this._load(plan.load);
    } else {
      this._show(plan.message);
    }
  }

  private _load(url: string): void {
    this._state = 'ready';
    this._loadedUrl = url;
    this._frame.url = url;
    setHidden(this._message, true);
    this._frame.show();
    this._poller.stop();
  }

  private _show(message: IMlflowMessage): void {
    const state = message.state;
    this._state = state;
    setHidden(this._message, false);
    this._message.dataset.state = state;
    this._message.setAttribute(
      'role',
      state === 'failed' || state === 'error' ? 'alert' : 'status'
    );
    setText(this._title, message.title);
    setText(this._detail, message.detail ?? '');
    setHidden(this._detail, !message.detail);
    setText(
      this._uri,
      message.uri ? this._trans.__('Tracking URI: %1', message.uri) : ''
    );
    setHidden(this._uri, !message.uri);
    if (message.link) {
      this._link.href = message.link;
    } else {
      this._link.removeAttribute('href');
    }
    setHidden(this._link, !message.link);
    this._poller.reschedule();
  }

  private readonly _store: IMlflowStatusStore;
  private readonly _origin: string;
  private readonly _trans: TranslationBundle;
  private readonly _message: HTMLDivElement;
  private readonly _title: HTMLParagraphElement;
  private readonly _detail: HTMLParagraphElement;
  private readonly _uri: HTMLParagraphElement;
  private readonly _link: HTMLAnchorElement;
  private readonly _frame: IFrame;
  private readonly _poller: Poller;
  private _state: MlflowViewState = 'loading';
  private _status: IMlflowStatus | null = null;
  private _ui: string | null = null;
  private _path: string | null = null;
  private _loadedUrl: string | null = null;
}

export namespace MlflowView {
  export interface IOptions {
    /** Where the MLflow status comes from (shared). */
    store: IMlflowStatusStore;
    /** The page's origin (default: the window's). */
    origin?: string;
    /** Translates the tab's strings (default: as written). */
    translator?: ITranslator | null;
  }
}
