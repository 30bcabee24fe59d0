/**
 * The "MLflow" main-area tab: the MLflow UI in an iframe, once the tracking server is ready.
 *
 * - `MlflowView` is the tab's content. While MLflow starts it says "MLflow is starting (N s)…"
 *   and asks again every 2 s (only while the tab is shown); once ready it loads the UI. A failed
 *   start shows the error and the tracking URI (and is checked again every 10 s, as the server
 *   restarts MLflow). Navigating to a fragment (`#/experiments/1/runs/abc`) reuses the iframe.
 * - `MlflowOpener` is what `jupyter-air:open-mlflow` runs: one tab, created on demand, reused and
 *   navigated after; a UI on another origin (the user's own MLflow server, which may refuse to be
 *   framed) opens in a browser tab instead.
 */
import { MainAreaWidget, ToolbarButton } from '@jupyterlab/apputils';
import { IFrame, refreshIcon, launchIcon } from '@jupyterlab/ui-components';

import { ShownWidget } from '../common/shown-widget';
import { ITimers } from '../common/timers';
import { h, newTabLink, setHidden, setText } from '../gpu/dom';
import { experimentsIcon } from '../icons';
import { describeError } from './api';
import { isForeignUrl, safeFragment, statusUiUrl, uiLink } from './links';
import { Poller } from './poller';
import { MlflowStatusStore } from './status';
import { IMlflowStatus } from './types';

/** Seconds between status checks while MLflow starts. */
export const STARTING_POLL_MS = 2000;
/** Seconds between status checks after a failure. */
export const FAILED_POLL_MS = 10000;

/** The iframe's sandbox exceptions: the MLflow UI is a single-page app with forms and downloads. */
export const MLFLOW_SANDBOX: IFrame.SandboxExceptions[] = [
  'allow-scripts',
  'allow-same-origin',
  'allow-forms',
  'allow-popups',
  'allow-downloads'
];

/** The id of the MLflow tab. */
export const MLFLOW_TAB_ID = 'jupyter-air-mlflow';

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

/** The content of the MLflow tab. */
export class MlflowView extends ShownWidget {
  constructor(options: MlflowView.IOptions) {
    super();
    this.addClass('jp-air-mlflow');
    this._store = options.store;
    this._origin = options.origin ?? window.location.origin;

    this._message = h('div', 'jp-air-mlflow-message');
    this._message.setAttribute('role', 'status');
    this._title = h(
      'p',
      'jp-air-mlflow-message-title',
      'Connecting to MLflow…'
    );
    this._detail = h('p', 'jp-air-mlflow-message-detail');
    this._detail.hidden = true;
    this._uri = h('p', 'jp-air-mlflow-message-uri');
    this._uri.hidden = true;
    this._link = newTabLink(
      'jp-air-mlflow-message-link',
      'Open the MLflow UI in a browser tab'
    );
    this._link.hidden = true;
    this._message.append(this._title, this._detail, this._uri, this._link);

    this._frame = new IFrame({
      sandbox: MLFLOW_SANDBOX,
      referrerPolicy: 'same-origin'
    });
    this._frame.addClass('jp-air-mlflow-frame');
    this._frame.node.querySelector('iframe')!.title = 'MLflow';
    this._frame.hide();

    this.node.append(this._message, this._frame.node);

    this._poller = new Poller({
      poll: () => this._check(),
      delay: () => this._nextDelay(),
      timers: options.timers
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

  /** One status check (nothing once the UI is loaded). */
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
        this._show('error', 'Cannot get the state of MLflow', {
          detail: describeError(error)
        });
      }
    }
  }

  /** Show what a status says, and load the UI once it is ready. */
  private _apply(status: IMlflowStatus): void {
    if (this._loadedUrl !== null) {
      return;
    }
    this._status = status;
    const uri = status.tracking_uri;
    switch (status.state) {
      case 'starting': {
        const elapsed =
          typeof status.elapsed_s === 'number' &&
          Number.isFinite(status.elapsed_s)
            ? ` (${Math.max(0, Math.round(status.elapsed_s))} s)`
            : '';
        const restarts = status.restarts > 0 ? status.restarts : 0;
        this._show('starting', `MLflow is starting${elapsed}…`, {
          detail: restarts
            ? `Restarted ${restarts} time${restarts === 1 ? '' : 's'}${
                status.error ? `; last error: ${status.error}` : ''
              }`
            : null
        });
        return;
      }
      case 'disabled':
        this._show('disabled', 'MLflow is disabled on this server', {
          detail:
            status.error ||
            'No MLFLOW_TRACKING_URI is set and the embedded tracking server is turned off.'
        });
        return;
      case 'ready':
        break;
      case 'external':
        if (status.reachable === false) {
          this._show('failed', 'MLflow does not answer', {
            detail: status.error || 'Its /health endpoint did not answer.',
            uri
          });
          return;
        }
        break;
      default:
        // failed, stopped, or a state this frontend does not know
        this._show(
          'failed',
          status.state === 'failed'
            ? 'MLflow is not available'
            : 'MLflow is not running',
          { detail: status.error || 'The tracking server is not running.', uri }
        );
        return;
    }
    const ui = statusUiUrl(status);
    if (ui === null) {
      this._show('no-ui', 'This MLflow has no web UI to show here', {
        detail: status.error,
        uri
      });
      return;
    }
    this._ui = ui;
    if (isForeignUrl(ui, this._origin)) {
      this._show('foreign', 'The MLflow UI is on another server', {
        detail:
          'It may refuse to be shown inside JupyterLab: open it in a browser tab.',
        uri,
        link: uiLink(ui, this._path)
      });
      return;
    }
    this._load(uiLink(ui, this._path) ?? ui);
  }

  private _load(url: string): void {
    this._state = 'ready';
    this._loadedUrl = url;
    this._frame.url = url;
    setHidden(this._message, true);
    this._frame.show();
    this._poller.stop();
  }

  private _show(
    state: MlflowViewState,
    title: string,
    extra: {
      detail?: string | null;
      uri?: string | null;
      link?: string | null;
    } = {}
  ): void {
    this._state = state;
    setHidden(this._message, false);
    this._message.dataset.state = state;
    this._message.setAttribute(
      'role',
      state === 'failed' || state === 'error' ? 'alert' : 'status'
    );
    setText(this._title, title);
    setText(this._detail, extra.detail ?? '');
    setHidden(this._detail, !extra.detail);
    setText(this._uri, extra.uri ? `Tracking URI: ${extra.uri}` : '');
    setHidden(this._uri, !extra.uri);
    if (extra.link) {
      this._link.href = extra.link;
    } else {
      this._link.removeAttribute('href');
    }
    setHidden(this._link, !extra.link);
    this._poller.reschedule();
  }

  private readonly _store: MlflowStatusStore;
  private readonly _origin: string;
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
    store: MlflowStatusStore;
    /** The page's origin (default: the window's). */
    origin?: string;
    /** Timer functions; default to the window's. */
    timers?: ITimers;
  }
}

/** Opens the MLflow UI: the one MLflow tab, or a browser tab for a UI on another origin. */
export class MlflowOpener {
  constructor(options: MlflowOpener.IOptions) {
    this._store = options.store;
    this._addTab = options.addTab;
    this._activate = options.activate;
    this._openWindow =
      options.openWindow ?? (url => window.open(url, '_blank'));
    this._origin = options.origin ?? window.location.origin;
    this._timers = options.timers;
  }

  /** The MLflow tab, `null` when none is open. */
  get widget(): MainAreaWidget<MlflowView> | null {
    return this._widget && !this._widget.isDisposed ? this._widget : null;
  }

  /**
   * Show the MLflow UI, at a fragment (`#/experiments/1/runs/abc`) when given. Resolves to the
   * tab, or `null` when the UI opened in a browser tab.
   */
  async open(
    path?: string | null,
    options: { allowWindow?: boolean } = {}
  ): Promise<MainAreaWidget<MlflowView> | null> {
    const allowWindow = options.allowWindow ?? true;
    const fragment = safeFragment(path);
    // decide on a browser tab within the click when the status is known (no await before it)
    let status = this._store.latest;
    if (status === null && allowWindow) {
      try {
        status = await this._store.fetch();
      } catch {
        status = null; // the tab says what is wrong
      }
    }
    if (status !== null && allowWindow) {
      const ui = statusUiUrl(status);
      if (ui !== null && isForeignUrl(ui, this._origin)) {
        const opened = this._openWindow(uiLink(ui, fragment) ?? ui);
        if (opened) {
          try {
            opened.opener = null;
          } catch {
            // a cross-origin window may not allow it; it was opened with noopener semantics anyway
          }
          return null;
        }
        // blocked: the tab shows a link instead
      }
    }
    let widget = this.widget;
    if (!widget) {
      widget = this._create();
      widget.content.navigate(fragment);
      this._addTab(widget);
    } else {
      widget.content.navigate(fragment);
    }
    this._activate(widget);
    return widget;
  }

  private _create(): MainAreaWidget<MlflowView> {
    const content = new MlflowView({
      store: this._store,
      origin: this._origin,
      timers: this._timers
    });
    const widget = new MainAreaWidget({ content });
    widget.id = MLFLOW_TAB_ID;
    widget.title.label = 'MLflow';
    widget.title.caption = 'MLflow tracking UI';
    widget.title.icon = experimentsIcon;
    widget.title.closable = true;
    widget.toolbar.addItem(
      'reload',
      new ToolbarButton({
        icon: refreshIcon,
        tooltip: 'Reload the MLflow UI',
        onClick: () => content.reload()
      })
    );
    widget.toolbar.addItem(
      'open-in-browser-tab',
      new ToolbarButton({
        icon: launchIcon,
        tooltip: 'Open this page in a browser tab',
        onClick: () => {
          const url = content.currentUrl;
          if (url) {
            const opened = this._openWindow(url);
            if (opened) {
              try {
                opened.opener = null;
              } catch {
                // see above
              }
            }
          }
        }
      })
    );
    this._widget = widget;
    widget.disposed.connect(() => {
      if (this._widget === widget) {
        this._widget = null;
      }
    });
    return widget;
  }

  private readonly _store: MlflowStatusStore;
  private readonly _addTab: (widget: MainAreaWidget<MlflowView>) => void;
  private readonly _activate: (widget: MainAreaWidget<MlflowView>) => void;
  private readonly _openWindow: (url: string) => Window | null;
  private readonly _origin: string;
  private readonly _timers: ITimers | undefined;
  private _widget: MainAreaWidget<MlflowView> | null = null;
}

export namespace MlflowOpener {
  export interface IOptions {
    /** Where the MLflow status comes from (shared). */
    store: MlflowStatusStore;
    /** Adds the tab to the main area. */
    addTab: (widget: MainAreaWidget<MlflowView>) => void;
    /** Brings the tab to the front. */
    activate: (widget: MainAreaWidget<MlflowView>) => void;
    /** Opens a browser tab (default: `window.open(url, '_blank')`); `null` when blocked. */
    openWindow?: (url: string) => Window | null;
    /** The page's origin (default: the window's). */
    origin?: string;
    /** Timer functions of the tab's status checks; default to the window's. */
    timers?: ITimers;
  }
}
