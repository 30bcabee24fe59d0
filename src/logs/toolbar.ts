/**
 * The Logs view's toolbar: search (sent 400 ms after the last key, or at once on Enter), node,
 * attempt, the three level toggles, the time range (time-range.ts), Copy (the lines loaded) and
 * Download (every line matching the filters, a plain link the browser follows with the Jupyter
 * cookie).
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { Debouncer } from '@lumino/polling';

import {
  button,
  h,
  setAttr,
  setHidden,
  setOptions,
  setValue
} from '../common/dom';
import { CopyRefusedError, CopyText } from '../common/clipboard';
import { ILogFilters } from './api';
import { lineAsText, searchPattern } from './line';
import { TimeRange } from './time-range';
import { LogsModel } from './model';
import { LOG_LEVELS, LogLevel } from './types';

/** Milliseconds after the last key before a typed search is sent. */
export const SEARCH_DEBOUNCE_MS = 400;

/** The name of a level on its toggle. */
function levelName(trans: TranslationBundle, level: LogLevel): string {
  switch (level) {
    case 'warning':
      return trans.__('Warning');
    case 'error':
      return trans.__('Error');
    default:
      return trans.__('Info');
  }
}

export class LogsToolbar {
  constructor(options: LogsToolbar.IOptions) {
    const trans = (this._trans = options.trans);
    const model = (this._model = options.model);
    this._copy = options.copyText;
    this._notify = options.notify;
    this._downloadUrl = options.downloadUrl;
    this._debouncer = new Debouncer(
      () => this._applySearch(),
      SEARCH_DEBOUNCE_MS
    );
    this.node = h('div', 'jp-air-logs-toolbar');

    this._search = this._searchInput();
    this._node = h('select', 'jp-air-logs-node');
    this._node.title = trans.__('Which node of the job run');
    this._node.setAttribute('aria-label', trans.__('Node'));
    this._node.addEventListener('change', () => {
      model.setFilters({ node: Number(this._node.value) || 0 });
    });
    this._attempt = h('select', 'jp-air-logs-attempt-select');
    this._attempt.title = trans.__(
      'Which attempt (the latest follows into retries)'
    );
    this._attempt.setAttribute('aria-label', trans.__('Attempt'));
    this._attempt.addEventListener('change', () => {
      const value = this._attempt.value;
      model.setFilters({ attempt: value ? Number(value) : null });
    });

    this._range = new TimeRange(trans, range => model.setFilters(range));
    this._copyButton = button(
      'jp-air-logs-copy jp-air-logs-button',
      trans.__('Copy'),
      () => void this._copyLines(),
      trans.__('Copy the lines loaded here')
    );
    this._download = h(
      'a',
      'jp-air-logs-download jp-air-logs-button',
      trans.__('Download')
    );
    this._download.setAttribute('download', '');
    this._download.title = trans.__(
      'Download every line matching these filters (the whole log when nothing filters)'
    );
    this.node.append(
      this._search,
      this._node,
      this._attempt,
      this._levels(),
      this._range.node,
      this._copyButton,
      this._download
    );
  }

  /** The toolbar's element. */
  readonly node: HTMLDivElement;

  /** The search as a pattern for the rows' marks (`null`: no search). */
  get pattern(): RegExp | null {
    return this._pattern;
  }

  /** Values and choices from the model's filters and job run. */
  render(): void {
    const model = this._model;
    const filters = model.filters;
    this._renderChoices(filters);
    for (const [level, toggle] of this._levelToggles) {
      const on = filters.levels.includes(level);
      setAttr(toggle, 'aria-pressed', on ? 'true' : 'false');
      toggle.classList.toggle('jp-mod-active', on);
    }
    if (document.activeElement !== this._search) {
      setValue(this._search, filters.q);
    }
    this._range.render(filters);
    if (filters.q !== this._patternQuery) {
      this._pattern = searchPattern(filters.q);
      this._patternQuery = filters.q;
    }
    const forbidden =
      model.state === 'forbidden' || model.state === 'not-found';
    setHidden(this._download, forbidden);
    if (!forbidden) {
      setAttr(this._download, 'href', this._downloadUrl(filters));
    }
    this._copyButton.disabled = model.lines.length === 0;
  }

  dispose(): void {
    this._debouncer.dispose();
  }

  /** The node and attempt choices (hidden when there is only one). */
  private _renderChoices(filters: Readonly<ILogFilters>): void {
    const trans = this._trans;
    const model = this._model;
    const nodes = Math.max(model.nodes, filters.node + 1);
    setOptions(
      this._node,
      Array.from({ length: nodes }, (_, i) => [
        String(i),
        trans.__('Node %1', i)
      ])
    );
    setValue(this._node, String(filters.node));
    setHidden(this._node, nodes <= 1);

    const attempts = Math.max(model.attempts, filters.attempt ?? 0);
    setOptions(this._attempt, [
      [
        '',
        attempts > 1
          ? trans.__('Latest attempt (%1)', attempts)
          : trans.__('Latest attempt')
      ],
      ...Array.from(
        { length: attempts },
        (_, i) =>
          [String(i + 1), trans.__('Attempt %1', i + 1)] as [string, string]
      )
    ]);
    setValue(
      this._attempt,
      filters.attempt === null ? '' : String(filters.attempt)
    );
    setHidden(this._attempt, attempts <= 1 && filters.attempt === null);
  }

  /** The three level toggles (pressed: the level is shown). */
  private _levels(): HTMLDivElement {
    const trans = this._trans;
    const levels = h('div', 'jp-air-logs-levels');
    levels.setAttribute('role', 'group');
    levels.setAttribute('aria-label', trans.__('Levels'));
    for (const level of LOG_LEVELS) {
      const toggle = button(
        `jp-air-logs-level-toggle jp-air-logs-level-${level}`,
        levelName(trans, level),
        () => this._model.toggleLevel(level),
        trans.__('Show %1 lines', levelName(trans, level).toLowerCase())
      );
      toggle.dataset.level = level;
      this._levelToggles.set(level, toggle);
      levels.append(toggle);
    }
    return levels;
  }

  private _searchInput(): HTMLInputElement {
    const trans = this._trans;
    const search = h('input', 'jp-air-logs-search');
    search.type = 'search';
    search.placeholder = trans.__('Search the logs');
    search.title = trans.__(
      'Only lines containing this text (any case); Enter to search now'
    );
    search.setAttribute('aria-label', trans.__('Search the logs'));
    search.addEventListener('input', () => void this._debouncer.invoke());
    search.addEventListener('keydown', event => {
      if (event.key === 'Enter') {
        event.preventDefault();
        this._applySearch();
      } else if (event.key === 'Escape' && search.value) {
        event.preventDefault();
        search.value = '';
        this._applySearch();
      }
    });
    return search;
  }

  private _applySearch(): void {
    void this._debouncer.stop();
    this._model.setFilters({ q: this._search.value });
  }

  private async _copyLines(): Promise<void> {
    const trans = this._trans;
    const lines = this._model.lines;
    if (lines.length === 0) {
      return;
    }
    const text = lines.map(lineAsText).join('\n') + '\n';
    try {
      await this._copy(text);
      this._notify(
        // %1 is the count, %2 the count as the user reads numbers
        trans._n(
          'Copied %2 line',
          'Copied %2 lines',
          lines.length,
          lines.length.toLocaleString()
        )
      );
    } catch (error) {
      const why =
        error instanceof CopyRefusedError
          ? trans.__('the browser refused to copy')
          : error instanceof Error
            ? error.message
            : String(error);
      this._notify(trans.__('Cannot copy: %1', why));
    }
  }

  private readonly _trans: TranslationBundle;
  private readonly _model: LogsModel;
  private readonly _copy: CopyText;
  private readonly _notify: (text: string) => void;
  private readonly _downloadUrl: (filters: Readonly<ILogFilters>) => string;
  private readonly _debouncer: Debouncer;
  private readonly _search: HTMLInputElement;
  private readonly _node: HTMLSelectElement;
  private readonly _attempt: HTMLSelectElement;
  private readonly _levelToggles = new Map<LogLevel, HTMLButtonElement>();
  private readonly _range: TimeRange;
  private readonly _copyButton: HTMLButtonElement;
  private readonly _download: HTMLAnchorElement;
  private _pattern: RegExp | null = null;
  private _patternQuery = '';
}

export namespace LogsToolbar {
  export interface IOptions {
    model: LogsModel;
    trans: TranslationBundle;
    /** Copies to the clipboard. */
    copyText: CopyText;
    /** The download URL of filters. */
    downloadUrl: (filters: Readonly<ILogFilters>) => string;
    /** Says something for a few seconds in the status line ("Copied 3 lines"). */
    notify: (text: string) => void;
  }
}
