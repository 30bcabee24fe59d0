/**
 * What `jupyter-air:open-mlflow` runs: the one MLflow tab, created on demand, reused and
 * navigated after; a UI on another origin (the user's own MLflow server, which may refuse to be
 * framed) opens in a browser tab instead.
 */
import { MainAreaWidget, ToolbarButton } from '@jupyterlab/apputils';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { launchIcon, refreshIcon } from '@jupyterlab/ui-components';

import { loadTranslation } from '../common/translation';
import { experimentsIcon } from '../icons';
import { IMlflowStatusStore } from '../tokens';
import { isForeignUrl, safeFragment, statusUiUrl, uiLink } from './links';
import { MlflowView } from './ui-view';

/** The id of the MLflow tab. */
export const MLFLOW_TAB_ID = 'jupyter-air-mlflow';

/** Opens the MLflow UI: the one MLflow tab, or a browser tab for a UI on another origin. */
export class MlflowOpener {
  constructor(options: MlflowOpener.IOptions) {
    this._store = options.store;
    this._addTab = options.addTab;
    this._activate = options.activate;
    this._openWindow =
      options.openWindow ?? (url => window.open(url, '_blank'));
    this._origin = options.origin ?? window.location.origin;
    this._translator = options.translator ?? null;
    this._trans = loadTranslation(options.translator);
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
      if (
        ui !== null &&
        isForeignUrl(ui, this._origin) &&
        this._openBrowserTab(uiLink(ui, fragment) ?? ui)
      ) {
        return null;
      }
      // same origin, or the browser blocked the tab: the MLflow tab (with a link)
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

  /** Open `url` in a browser tab that has no handle on this page; `false` when blocked. */
  private _openBrowserTab(url: string): boolean {
    const opened = this._openWindow(url);
    if (!opened) {
      return false;
    }
    try {
      opened.opener = null;
    } catch {
      // a cross-origin window may not allow it; it was opened with noopener semantics anyway
    }
    return true;
  }

  private _create(): MainAreaWidget<MlflowView> {
    const trans = this._trans;
    const content = new MlflowView({
      store: this._store,
      origin: this._origin,
      translator: this._translator
    });
    const widget = new MainAreaWidget({ content });
    widget.id = MLFLOW_TAB_ID;
    widget.title.label = trans.__('MLflow');
    widget.title.caption = trans.__('MLflow tracking UI');
    widget.title.icon = experimentsIcon;
    widget.title.closable = true;
    widget.toolbar.addItem(
      'reload',
      new ToolbarButton({
        icon: refreshIcon,
        tooltip: trans.__('Reload the MLflow UI'),
        onClick: () => content.reload()
      })
    );
    widget.toolbar.addItem(
      'open-in-browser-tab',
      new ToolbarButton({
        icon: launchIcon,
        tooltip: trans.__('Open this page in a browser tab'),
        onClick: () => {
          const url = content.currentUrl;
          if (url) {
            this._openBrowserTab(url);
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

  private readonly _store: IMlflowStatusStore;
  private readonly _addTab: (widget: MainAreaWidget<MlflowView>) => void;
  private readonly _activate: (widget: MainAreaWidget<MlflowView>) => void;
  private readonly _openWindow: (url: string) => Window | null;
  private readonly _origin: string;
  private readonly _translator: ITranslator | null;
  private readonly _trans: TranslationBundle;
  private _widget: MainAreaWidget<MlflowView> | null = null;
}

export namespace MlflowOpener {
  export interface IOptions {
    /** Where the MLflow status comes from (shared). */
    store: IMlflowStatusStore;
    /** Adds the tab to the main area. */
    addTab: (widget: MainAreaWidget<MlflowView>) => void;
    /** Brings the tab to the front. */
    activate: (widget: MainAreaWidget<MlflowView>) => void;
    /** Opens a browser tab (default: `window.open(url, '_blank')`); `null` when blocked. */
    openWindow?: (url: string) => Window | null;
    /** The page's origin (default: the window's). */
    origin?: string;
    /** Translates the tab's strings (default: as written). */
    translator?: ITranslator | null;
  }
}
