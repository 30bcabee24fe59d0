/**
 * The "Logs" tab among the tabs of MLflow's run page, and the fallback when the page has no tab
 * list of the expected shape: a small fixed "Logs" link to the job run in JupyterLab.
 *
 * MLflow's tabs are Radix tabs (`role="tablist"`, `role="tab"` buttons with `data-state`); the
 * Logs tab is a button of the same classes, so it has MLflow's look, active or not. MLflow does
 * not know about it: while it is active, the page's content (the element after the run page's
 * header) is hidden and the logs panel shown in its place; a click on one of MLflow's tabs, or
 * any change of the route, gives the page back to MLflow.
 */
import { RUN_PAGE_TAB_LABELS, TABLIST_SELECTOR } from './shape';

/** Marks what this script adds to the page. */
export const MARK = 'data-jupyter-air';

/** The run page's parts the Logs tab needs. */
export interface IRunPageShape {
  tablist: HTMLElement;
  /** One of MLflow's tabs, whose classes the Logs tab takes. */
  model: HTMLElement;
  /** Where MLflow shows the selected tab's content. */
  content: HTMLElement;
}

function tabsOf(tablist: Element): HTMLElement[] {
  return Array.from(
    tablist.querySelectorAll<HTMLElement>('[role="tab"]')
  ).filter(tab => tab.getAttribute(MARK) === null);
}

/** The run page's tab list: MLflow's own (by its component id), else one with its tabs. */
function findTablist(root: ParentNode): HTMLElement | null {
  const known = root.querySelector<HTMLElement>(TABLIST_SELECTOR);
  if (known !== null) {
    return known;
  }
  for (const list of Array.from(
    root.querySelectorAll<HTMLElement>('[role="tablist"]')
  )) {
    const labels = tabsOf(list).map(tab => (tab.textContent ?? '').trim());
    if (RUN_PAGE_TAB_LABELS.every(label => labels.includes(label))) {
      return list;
    }
  }
  return null;
}

/** The content region: the element after the nearest ancestor of the tab list that has one. */
function findContent(tablist: HTMLElement): HTMLElement | null {
  let el: HTMLElement | null = tablist;
  for (let depth = 0; depth < 10 && el !== null; depth++) {
    let next = el.nextElementSibling;
    while (next !== null && ['STYLE', 'SCRIPT'].includes(next.tagName)) {
      next = next.nextElementSibling;
    }
    if (next instanceof HTMLElement && next.getAttribute(MARK) === null) {
      return next;
    }
    el = el.parentElement;
    if (el === null || el === document.body || el.tagName === 'MAIN') {
      return null;
    }
  }
  return null;
}

/** The run page's tab list and content, `null` when the page does not have that shape. */
export function findRunPageShape(
  root: ParentNode = document
): IRunPageShape | null {
  const tablist = findTablist(root);
  if (tablist === null) {
    return null;
  }
  const tabs = tabsOf(tablist);
  const model = tabs.find(tab => tab.tagName === 'BUTTON') ?? tabs[0];
  if (model === undefined) {
    return null;
  }
  const content = findContent(tablist);
  return content === null ? null : { tablist, model, content };
}

function setSelected(tab: HTMLElement, selected: boolean): void {
  tab.setAttribute('aria-selected', selected ? 'true' : 'false');
  tab.setAttribute('data-state', selected ? 'active' : 'inactive');
}

/**
 * The Logs tab on a run page: the button among MLflow's tabs, and the panel it shows in place of
 * MLflow's content.
 */
export class LogsTab {
  readonly button: HTMLButtonElement;

  constructor(
    readonly shape: IRunPageShape,
    readonly panel: HTMLElement,
    private readonly _onShow: () => void,
    private readonly _onHide: () => void
  ) {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = shape.model.className;
    button.setAttribute('role', 'tab');
    button.setAttribute(MARK, 'logs-tab');
    button.setAttribute('tabindex', '-1');
    const orientation = shape.model.getAttribute('data-orientation');
    if (orientation !== null) {
      button.setAttribute('data-orientation', orientation);
    }
    button.textContent = 'Logs';
    setSelected(button, false);
    button.addEventListener('click', event => {
      event.preventDefault();
      this.show();
    });
    this.button = button;
    panel.hidden = true;
    // a click on one of MLflow's tabs (before MLflow handles it) gives the page back
    shape.tablist.addEventListener('pointerdown', this._onTablist, true);
    shape.tablist.addEventListener('click', this._onTablist, true);
    shape.tablist.addEventListener('keydown', this._onTablist, true);
  }

  /** Whether the logs are shown. */
  get active(): boolean {
    return this._active;
  }

  /** Whether the tab and its panel are still where they were put (MLflow may re-render). */
  get attached(): boolean {
    return (
      this.button.isConnected &&
      this.panel.isConnected &&
      this.shape.tablist.isConnected &&
      this.shape.content.isConnected
    );
  }

  /** Put the tab after MLflow's tabs and the panel after the content. */
  attach(): void {
    this.shape.tablist.append(this.button);
    this.shape.content.after(this.panel);
  }

  /** Show the logs in place of MLflow's content. */
  show(): void {
    if (this._active) {
      return;
    }
    this._active = true;
    this._deselected = tabsOf(this.shape.tablist).filter(
      tab => tab.getAttribute('data-state') === 'active'
    );
    for (const tab of this._deselected) {
      setSelected(tab, false);
    }
    setSelected(this.button, true);
    this._contentDisplay = this.shape.content.style.display;
    this.shape.content.style.display = 'none';
    this.panel.hidden = false;
    this._onShow();
  }

  /** Give the page back to MLflow. */
  hide(): void {
    if (!this._active) {
      return;
    }
    this._active = false;
    setSelected(this.button, false);
    for (const tab of this._deselected) {
      if (tab.isConnected) {
        setSelected(tab, true);
      }
    }
    this._deselected = [];
    this.shape.content.style.display = this._contentDisplay;
    this.panel.hidden = true;
    this._onHide();
  }

  /** Take everything out of the page. */
  dispose(): void {
    this.hide();
    const list = this.shape.tablist;
    list.removeEventListener('pointerdown', this._onTablist, true);
    list.removeEventListener('click', this._onTablist, true);
    list.removeEventListener('keydown', this._onTablist, true);
    this.button.remove();
    this.panel.remove();
  }

  private readonly _onTablist = (event: Event): void => {
    const target = event.target instanceof Element ? event.target : null;
    const tab = target?.closest('[role="tab"]');
    if (!tab || tab === this.button) {
      return;
    }
    if (event.type === 'keydown') {
      const key = (event as KeyboardEvent).key;
      if (key !== 'Enter' && key !== ' ') {
        return;
      }
    }
    this.hide();
  };

  private _active = false;
  private _deselected: HTMLElement[] = [];
  private _contentDisplay = '';
}

/**
 * The fallback on a page without a tab list of the expected shape: a small fixed "Logs" link
 * that opens the job run in JupyterLab (its page there has its logs).
 */
export function fallbackLink(href: string): HTMLAnchorElement {
  const link = document.createElement('a');
  link.className = 'jp-air-mlf-logs-fallback';
  link.setAttribute(MARK, 'logs-link');
  link.href = href;
  link.target = '_blank';
  link.rel = 'noopener noreferrer';
  link.textContent = 'Logs';
  link.title = 'The logs of this run, in JupyterLab';
  return link;
}
