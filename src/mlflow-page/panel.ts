/**
 * The logs of one run, in the Logs tab of MLflow's run page: lines with time, node and level,
 * a search box, node, level and time range filters, follow while the job runs (scrolling up
 * pauses it, "Resume following" or scrolling back to the bottom follows again), copy and
 * download of what matches.
 *
 * It reuses the Logs view's pieces that need no JupyterLab (the query, the line window, the line
 * text with its ANSI colours and search marks, the time inputs, the clipboard); the server's
 * strings reach the page through `textContent` only.
 */
import { CopyText, copyToClipboard } from '../common/clipboard';
import { LineWindow } from '../logs/line-window';
import {
  formatLineTime,
  levelLabel,
  lineAsText,
  renderLineText,
  searchPattern
} from '../logs/line';
import { ILogFilters, defaultFilters, isAbort } from '../logs/query';
import { inputToSeconds } from '../logs/time-range';
import { ILogLine, ILogPage, LOG_LEVELS, LogLevel } from '../logs/types';
import { nodeCount } from '../workloads/format';
import { RunLogsClient, RunLogsError, runLogsDownloadUrl } from './client';
import { MARK } from './tab';

/** Lines asked for in one page. */
export const PAGE_SIZE = 1000;
/** Lines held at most (the oldest are dropped while following). */
export const MAX_LINES = 10_000;
/** Seconds the server may hold a follow request open waiting for a line. */
export const WAIT_S = 20;
/** Wait before asking again after a failed call (ms). */
export const RETRY_MS = 3000;
/** Wait after the last keystroke in the search box (ms). */
export const SEARCH_DEBOUNCE_MS = 300;
/** What a user without access to the logs reads. */
export const NO_ACCESS = "You don't have access to these logs";

const LEVEL_NAMES: Record<LogLevel, string> = {
  info: 'Info',
  warning: 'Warning',
  error: 'Error'
};

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** What the panel needs. */
export interface ILogsPanelOptions {
  client: RunLogsClient;
  runId: string;
  /** The run's first answer (its job run and status); `null` when access was refused. */
  first: ILogPage | null;
  /** The server's message when access was refused (403). */
  denied?: string | null;
  copy?: CopyText;
  waitS?: number;
  retryMs?: number;
}

export class LogsPanel {
  readonly node = el('div', 'jp-air-mlf-logs');

  constructor(options: ILogsPanelOptions) {
    this._client = options.client;
    this._runId = options.runId;
    this._first = options.first;
    this._copy = options.copy ?? copyToClipboard;
    this._waitS = options.waitS ?? WAIT_S;
    this._retryMs = options.retryMs ?? RETRY_MS;
    this.node.setAttribute(MARK, 'logs-panel');
    if (options.first === null) {
      this._showMessage(NO_ACCESS, options.denied ?? '');
      this.node.append(this._message);
      this.node.dataset.state = 'denied';
      return;
    }
    this._build();
  }

  /** The filters shown. */
  get filters(): Readonly<ILogFilters> {
    return this._filters;
  }

  /** The lines held (they all match the filters). */
  get lines(): readonly ILogLine[] {
    return this._window.lines;
  }

  /** Whether following is paused (the user scrolled up). */
  get paused(): boolean {
    return this._paused;
  }

  /** Whether a request for newer lines is (or will be) waiting on the server. */
  get following(): boolean {
    return this._shouldFollow();
  }

  /** The scrolled list of lines. */
  get viewport(): HTMLElement {
    return this._list;
  }

  /** Resolves when the load in progress (if any) is done (for tests). */
  get loading(): Promise<void> {
    return this._loading;
  }

  /** The tab is shown: load (the first time) and follow. */
  show(): void {
    if (this._first === null || this._disposed) {
      return;
    }
    this._shown = true;
    if (!this._loaded) {
      this._loaded = true;
      this._loadNodes();
      this.reload();
    } else {
      this._ensureFollowing();
    }
  }

  /** The tab is hidden: no more waiting on the server. */
  hide(): void {
    this._shown = false;
    this._stopFollowing();
  }

  dispose(): void {
    this._disposed = true;
    this.hide();
    this._gen++;
    window.clearTimeout(this._searchTimer);
    this.node.remove();
  }

  /** Change filters and read again from the tail. */
  setFilters(change: Partial<ILogFilters>): void {
    this._filters = { ...this._filters, ...change, attempt: null };
    this._paused = false;
    this._updateDownload();
    this.reload();
  }

  /** Read the tail of the log again (with the filters). */
  reload(): void {
    this._stopFollowing();
    const gen = ++this._gen;
    this._page = null;
    this._window.clear();
    this._renderAll();
    this._setStatus('Loading…');
    this._loading = this._client
      .logs(this._runId, this._filters, { tail: true, limit: PAGE_SIZE })
      .then(
        page => {
          if (gen !== this._gen) {
            return;
          }
          this._page = page;
          this._window.reset(page);
          this._renderAll();
          this._scrollToBottom();
          this._ensureFollowing();
          this._renderStatus();
        },
        error => {
          if (gen === this._gen) {
            this._failed(error);
          }
        }
      );
  }

  /** Stop following (the user scrolled up). */
  pause(): void {
    if (this._paused || !this._canFollow()) {
      return;
    }
    this._paused = true;
    this._stopFollowing();
    this._renderStatus();
  }

  /** Follow again (the Resume button, or back at the bottom). */
  resume(): void {
    if (!this._paused) {
      return;
    }
    this._paused = false;
    this._scrollToBottom();
    this._ensureFollowing();
    this._renderStatus();
  }

  /** Load the lines before the first one held. */
  async loadEarlier(): Promise<void> {
    const before = this._window.prev;
    if (before === null || this._loadingEarlier) {
      return;
    }
    this._loadingEarlier = true;
    const gen = this._gen;
    const list = this._list;
    const height = list.scrollHeight;
    try {
      const page = await this._client.logs(this._runId, this._filters, {
        before,
        limit: PAGE_SIZE
      });
      if (gen !== this._gen) {
        return;
      }
      this._window.prepend(page);
      this._renderAll();
      list.scrollTop += list.scrollHeight - height;
      this._renderStatus();
    } catch (error) {
      if (gen === this._gen) {
        this._failed(error);
      }
    } finally {
      this._loadingEarlier = false;
    }
  }

  /** Copy the lines held (what matches the filters) as text. */
  async copy(): Promise<void> {
    const text = this._window.lines.map(line => lineAsText(line)).join('\n');
    try {
      await this._copy(text);
      this._notice(`Copied ${this._window.lines.length} lines`);
    } catch {
      this._notice('The browser refused to copy');
    }
  }

  // the elements -----------------------------------------------------------------------------
  private _build(): void {
    const bar = el('div', 'jp-air-mlf-logs-toolbar');
    this._search.type = 'search';
    this._search.placeholder = 'Search';
    this._search.setAttribute('aria-label', 'Search the logs');
    this._search.addEventListener('input', () => {
      window.clearTimeout(this._searchTimer);
      this._searchTimer = window.setTimeout(
        () => this.setFilters({ q: this._search.value }),
        SEARCH_DEBOUNCE_MS
      );
    });
    this._search.addEventListener('keydown', event => {
      if (event.key === 'Enter') {
        window.clearTimeout(this._searchTimer);
        this.setFilters({ q: this._search.value });
      }
    });
    this._node.setAttribute('aria-label', 'Node');
    this._node.append(this._nodeOption(0));
    this._node.addEventListener('change', () =>
      this.setFilters({ node: Number(this._node.value) || 0 })
    );
    const levels = el('span', 'jp-air-mlf-logs-levels');
    for (const level of LOG_LEVELS) {
      const label = el('label', `jp-air-mlf-logs-level jp-mod-${level}`);
      const box = el('input', 'jp-air-mlf-logs-level-box');
      box.type = 'checkbox';
      box.checked = true;
      box.value = level;
      box.addEventListener('change', () => {
        const shown = Array.from(
          levels.querySelectorAll<HTMLInputElement>('input:checked')
        ).map(input => input.value as LogLevel);
        this.setFilters({ levels: shown });
      });
      label.append(box, document.createTextNode(LEVEL_NAMES[level]));
      levels.append(label);
    }
    const range = el('span', 'jp-air-mlf-logs-range');
    for (const [name, text] of [
      ['since', 'From'],
      ['until', 'To']
    ] as const) {
      const label = el('label', `jp-air-mlf-logs-${name}`, text);
      const input = el('input', `jp-air-mlf-logs-${name}-input`);
      input.type = 'datetime-local';
      input.step = '1';
      input.addEventListener('change', () =>
        this.setFilters({ [name]: inputToSeconds(input.value) })
      );
      label.append(input);
      range.append(label);
    }
    const copy = el(
      'button',
      'jp-air-mlf-logs-copy jp-air-mlf-logs-button',
      'Copy'
    );
    copy.type = 'button';
    copy.title = 'Copy the lines shown (they match the filters)';
    copy.addEventListener('click', () => void this.copy());
    this._download.textContent = 'Download';
    this._download.title = 'Download every line that matches the filters';
    this._download.setAttribute('download', '');
    this._updateDownload();
    bar.append(this._search, this._node, levels, range, copy, this._download);

    const statusBar = el('div', 'jp-air-mlf-logs-statusbar');
    this._resume.type = 'button';
    this._resume.hidden = true;
    this._resume.addEventListener('click', () => this.resume());
    statusBar.append(this._status, this._resume);

    this._older.type = 'button';
    this._older.hidden = true;
    this._older.addEventListener('click', () => void this.loadEarlier());
    this._list.addEventListener('scroll', () => this._onScroll());
    this._list.tabIndex = 0;
    this._message.hidden = true;
    this.node.append(bar, statusBar, this._message, this._older, this._list);
  }

  private _nodeOption(node: number): HTMLOptionElement {
    const option = el('option', '', `Node ${node}`);
    option.value = String(node);
    return option;
  }

  /** The node filter's choices: one per node of the job run. */
  private _loadNodes(): void {
    const jobId = this._first?.job_id;
    if (!jobId) {
      return;
    }
    this._client.job(jobId).then(
      job => {
        const count = Math.min(nodeCount(job), 1024);
        const options = [];
        for (let node = 0; node < count; node++) {
          options.push(this._nodeOption(node));
        }
        this._node.replaceChildren(...options);
        this._node.value = String(this._filters.node);
      },
      error => console.warn('jupyter-air: the job run of the logs', error)
    );
  }

  private _updateDownload(): void {
    this._download.href = runLogsDownloadUrl(
      this._client.baseUrl,
      this._runId,
      this._filters
    );
  }

  private _row(line: ILogLine, pattern: RegExp | null): HTMLElement {
    const row = el('div', 'jp-air-mlf-logs-row');
    const level = String(line.level);
    row.dataset.level = level;
    const time = el('span', 'jp-air-mlf-logs-time', formatLineTime(line.t));
    time.title = String(line.t);
    const node = el('span', 'jp-air-mlf-logs-node', `node ${line.node}`);
    const badge = el('span', 'jp-air-mlf-logs-level-badge', levelLabel(level));
    const text = el('span', 'jp-air-mlf-logs-text');
    renderLineText(text, String(line.text ?? ''), pattern);
    row.append(time, node, badge, text);
    return row;
  }

  private _renderAll(): void {
    const pattern = searchPattern(this._filters.q);
    this._list.replaceChildren(
      ...this._window.lines.map(line => this._row(line, pattern))
    );
    this._older.hidden = this._window.prev === null;
    this._older.textContent = 'Load earlier lines';
    this._renderEmpty();
  }

  private _renderEmpty(): void {
    if (this._window.lines.length > 0 || this._page === null) {
      this._hideMessage();
    } else if (this._page.purged) {
      this._showMessage(
        'These logs were removed',
        'Logs are kept 60 days; the run keeps them as artifacts (logs/).'
      );
    } else {
      const filtered =
        this._filters.q !== '' ||
        this._filters.since !== null ||
        this._filters.until !== null ||
        this._filters.levels.length < LOG_LEVELS.length;
      this._showMessage(
        filtered ? 'No lines match these filters' : 'No lines yet',
        this._window.complete ? '' : 'New lines show here as they are written.'
      );
    }
  }

  private _renderStatus(): void {
    const count = this._window.lines.length;
    const status = this._page?.job_status ?? '';
    let text = `${count} line${count === 1 ? '' : 's'}`;
    if (this._paused) {
      text += ' · following paused';
    } else if (this._shouldFollow()) {
      text += ' · following';
    } else if (status) {
      text += ` · ${status.toLowerCase()}`;
    }
    this._setStatus(text);
    this._resume.hidden = !this._paused;
    this._resume.textContent = 'Resume following';
    this.node.dataset.paused = this._paused ? 'true' : 'false';
    this.node.dataset.following = this._shouldFollow() ? 'true' : 'false';
  }

  private _setStatus(text: string): void {
    this._status.textContent = text;
  }

  private _notice(text: string): void {
    this._setStatus(text);
    window.setTimeout(() => {
      if (!this._disposed) {
        this._renderStatus();
      }
    }, 3000);
  }

  private _showMessage(title: string, detail: string): void {
    const heading = el('p', 'jp-air-mlf-logs-message-title', title);
    const more = el('p', 'jp-air-mlf-logs-message-detail', detail);
    this._message.replaceChildren(heading, ...(detail ? [more] : []));
    this._message.hidden = false;
  }

  private _hideMessage(): void {
    this._message.hidden = true;
    this._message.replaceChildren();
  }

  private _failed(error: unknown): void {
    if (isAbort(error)) {
      return;
    }
    const status = error instanceof RunLogsError ? error.status : 0;
    const message = error instanceof Error ? error.message : String(error);
    if (status === 403) {
      this._showMessage(NO_ACCESS, message);
      this.node.dataset.state = 'denied';
    } else {
      this._showMessage('The logs could not be read', message);
    }
    this._setStatus('');
  }

  // following --------------------------------------------------------------------------------
  private _canFollow(): boolean {
    return (
      this._page !== null &&
      !this._window.complete &&
      this._window.next !== null &&
      !this._window.endTrimmed
    );
  }

  private _shouldFollow(): boolean {
    return this._shown && !this._paused && !this._disposed && this._canFollow();
  }

  private _ensureFollowing(): void {
    if (this._abort === null && this._shouldFollow()) {
      void this._follow(this._gen);
    }
    this._renderStatus();
  }

  private _stopFollowing(): void {
    const abort = this._abort;
    this._abort = null;
    abort?.abort();
  }

  private async _follow(gen: number): Promise<void> {
    const controller = new AbortController();
    this._abort = controller;
    try {
      while (
        gen === this._gen &&
        this._abort === controller &&
        this._shouldFollow()
      ) {
        const after = this._window.next;
        if (after === null) {
          return;
        }
        let page: ILogPage;
        try {
          page = await this._client.logs(
            this._runId,
            this._filters,
            { after, limit: PAGE_SIZE, wait: this._waitS },
            controller.signal
          );
        } catch (error) {
          if (
            isAbort(error) ||
            gen !== this._gen ||
            controller.signal.aborted
          ) {
            return;
          }
          const status = error instanceof RunLogsError ? error.status : 0;
          if (status === 400 || status === 403 || status === 404) {
            this._failed(error);
            return;
          }
          await new Promise(resolve =>
            window.setTimeout(resolve, this._retryMs)
          );
          continue;
        }
        if (gen !== this._gen || controller.signal.aborted) {
          return;
        }
        this._page = page;
        this._append(page);
      }
    } finally {
      if (this._abort === controller) {
        this._abort = null;
      }
      if (gen === this._gen && !this._disposed) {
        this._renderStatus();
      }
    }
  }

  private _append(page: ILogPage): void {
    const atBottom = this._atBottom();
    const { added, removed } = this._window.append(page);
    if (removed > 0) {
      this._renderAll();
    } else if (added > 0) {
      const pattern = searchPattern(this._filters.q);
      const lines = this._window.lines;
      this._list.append(
        ...lines
          .slice(lines.length - added)
          .map(line => this._row(line, pattern))
      );
      this._renderEmpty();
    }
    if (atBottom && !this._paused) {
      this._scrollToBottom();
    }
    this._renderStatus();
  }

  private _atBottom(): boolean {
    const list = this._list;
    return list.scrollHeight - list.scrollTop - list.clientHeight <= 4;
  }

  private _scrollToBottom(): void {
    this._list.scrollTop = this._list.scrollHeight;
    this._lastTop = this._list.scrollTop;
  }

  private _onScroll(): void {
    const top = this._list.scrollTop;
    const up = top < this._lastTop;
    this._lastTop = top;
    if (this._atBottom()) {
      this.resume();
    } else if (up) {
      this.pause();
    }
  }

  private readonly _client: RunLogsClient;
  private readonly _runId: string;
  private readonly _first: ILogPage | null;
  private readonly _copy: CopyText;
  private readonly _waitS: number;
  private readonly _retryMs: number;
  private readonly _window = new LineWindow(MAX_LINES);
  private _filters: ILogFilters = defaultFilters();
  private _page: ILogPage | null = null;
  private _gen = 0;
  private _abort: AbortController | null = null;
  private _shown = false;
  private _loaded = false;
  private _paused = false;
  private _disposed = false;
  private _loadingEarlier = false;
  private _loading: Promise<void> = Promise.resolve();
  private _searchTimer = 0;
  private _lastTop = 0;
  private readonly _search = el('input', 'jp-air-mlf-logs-search');
  private readonly _node = el('select', 'jp-air-mlf-logs-node-filter');
  private readonly _download = el(
    'a',
    'jp-air-mlf-logs-download jp-air-mlf-logs-button'
  );
  private readonly _status = el('span', 'jp-air-mlf-logs-status');
  private readonly _resume = el(
    'button',
    'jp-air-mlf-logs-resume jp-air-mlf-logs-button'
  );
  private readonly _message = el('div', 'jp-air-mlf-logs-message');
  private readonly _older = el(
    'button',
    'jp-air-mlf-logs-older jp-air-mlf-logs-button'
  );
  private readonly _list = el('div', 'jp-air-mlf-logs-lines');
}
