/**
 * The Logs view of a job run (a main-area tab): a toolbar (search, node, attempt, levels, time
 * range, Copy, Download), a line that says what is shown and whether it follows the job, and the
 * lines in a virtual list: every row has the same height and only the rows on screen are in the
 * DOM, so 50,000 lines held scroll like 50.
 *
 * - Scrolling up pauses following ("Following paused — scroll to the bottom or click Resume");
 *   back at the bottom (or Resume) it follows again. At the top, older lines load.
 * - Lines are text: no markup is ever parsed (see line.ts). A row shows what fits; its tooltip
 *   the whole line, and a click shows it in full below the list.
 * - Each rendering of the rows is a `jupyter-air:logs-render` performance measure.
 *
 * The model (model.ts) reads the lines and follows while the view is shown; hidden, nothing is
 * sent.
 */
import { Widget } from '@lumino/widgets';

import { ShownWidget } from '../common/shown-widget';
import { ITimers, windowTimers } from '../common/timers';
import { button, h, setAttr, setHidden, setText } from '../gpu/dom';
import { now as clockNow, record } from '../gpu/timing';
import { jobName, jobStatusLabel } from '../workloads/format';
import { logsDownloadUrl } from './api';
import { stripAnsi } from './ansi';
import {
  ILineRow,
  createRow,
  levelLabel,
  lineAsText,
  searchPattern,
  updateRow
} from './line';
import { ILogsChange, LogsModel } from './model';
import { ILogLine, LOG_LEVELS, LogLevel } from './types';
import { ROW_HEIGHT, visibleRange } from './virtual';

/** The performance measure of one rendering of the rows. */
export const LOGS_RENDER_MEASURE = 'jupyter-air:logs-render';

/** Milliseconds after the last key before a typed search is sent. */
export const SEARCH_DEBOUNCE_MS = 400;

/** Copies text to the clipboard (injectable for tests). */
export type CopyText = (text: string) => Promise<void>;

/** The clipboard, or a hidden textarea and `execCommand('copy')` where there is none. */
export async function copyToClipboard(text: string): Promise<void> {
  try {
    if (typeof navigator !== 'undefined' && navigator.clipboard?.writeText) {
      await navigator.clipboard.writeText(text);
      return;
    }
  } catch {
    // not allowed (no focus, insecure origin): the fallback below
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.appendChild(area);
  area.select();
  try {
    if (!document.execCommand('copy')) {
      throw new Error('the browser refused to copy');
    }
  } finally {
    area.remove();
  }
}

/** `datetime-local` input value → unix seconds (local time), `null` when empty or invalid. */
export function inputToSeconds(value: string): number | null {
  if (!value) {
    return null;
  }
  const ms = new Date(value).getTime();
  return Number.isFinite(ms) ? ms / 1000 : null;
}

/** Unix seconds → `datetime-local` input value (local time, to the second). */
export function secondsToInput(seconds: number | null): string {
  if (seconds === null) {
    return '';
  }
  const d = new Date(seconds * 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

const LEVEL_NAMES: Record<LogLevel, string> = {
  info: 'Info',
  warning: 'Warning',
  error: 'Error'
};

export class LogsView extends ShownWidget {
  constructor(options: LogsView.IOptions) {
    super();
    this.addClass('jp-air-logs');
    this._model = options.model;
    this._copy = options.copyText ?? copyToClipboard;
    this._timers = options.timers ?? windowTimers;
    this._downloadUrl =
      options.downloadUrl ??
      (filters => logsDownloadUrl(this._model.jobId, filters));
    this.node.dataset.jobId = this._model.jobId;

    // toolbar
    const toolbar = h('div', 'jp-air-logs-toolbar');
    this._search = h('input', 'jp-air-logs-search');
    this._search.type = 'search';
    this._search.placeholder = 'Search the logs';
    this._search.title =
      'Only lines containing this text (any case); Enter to search now';
    this._search.setAttribute('aria-label', 'Search the logs');
    this._search.addEventListener('input', () => this._searchSoon());
    this._search.addEventListener('keydown', event => {
      if (event.key === 'Enter') {
        event.preventDefault();
        this._applySearch();
      } else if (event.key === 'Escape' && this._search.value) {
        event.preventDefault();
        this._search.value = '';
        this._applySearch();
      }
    });

    this._node = h('select', 'jp-air-logs-node');
    this._node.title = 'Which node of the job run';
    this._node.setAttribute('aria-label', 'Node');
    this._node.addEventListener('change', () => {
      this._model.setFilters({ node: Number(this._node.value) || 0 });
    });
    this._attempt = h('select', 'jp-air-logs-attempt-select');
    this._attempt.title = 'Which attempt (the latest follows into retries)';
    this._attempt.setAttribute('aria-label', 'Attempt');
    this._attempt.addEventListener('change', () => {
      const value = this._attempt.value;
      this._model.setFilters({ attempt: value ? Number(value) : null });
    });

    const levels = h('div', 'jp-air-logs-levels');
    levels.setAttribute('role', 'group');
    levels.setAttribute('aria-label', 'Levels');
    for (const level of LOG_LEVELS) {
      const toggle = button(
        `jp-air-logs-level-toggle jp-air-logs-level-${level}`,
        LEVEL_NAMES[level],
        () => this._model.toggleLevel(level),
        `Show ${LEVEL_NAMES[level].toLowerCase()} lines`
      );
      toggle.dataset.level = level;
      this._levelToggles.set(level, toggle);
      levels.append(toggle);
    }

    const range = h('div', 'jp-air-logs-range');
    this._since = this._timeInput(
      'since',
      'From',
      'Lines written at or after this time'
    );
    this._until = this._timeInput(
      'until',
      'To',
      'Lines written before this time'
    );
    range.append(this._since.label, this._until.label);

    this._copyButton = button(
      'jp-air-logs-copy jp-air-logs-button',
      'Copy',
      () => void this._copyLines(),
      'Copy the lines loaded here'
    );
    // a plain link: the browser fetches it with the Jupyter cookie and saves the attachment
    this._download = h(
      'a',
      'jp-air-logs-download jp-air-logs-button',
      'Download'
    );
    this._download.setAttribute('download', '');
    this._download.title =
      'Download every line matching these filters (the whole log when nothing filters)';

    toolbar.append(
      this._search,
      this._node,
      this._attempt,
      levels,
      range,
      this._copyButton,
      this._download
    );

    // status line
    const status = h('div', 'jp-air-logs-status');
    this._summary = h('span', 'jp-air-logs-summary');
    this._follow = h('span', 'jp-air-logs-follow');
    this._follow.setAttribute('role', 'status');
    this._resume = button(
      'jp-air-logs-resume jp-air-logs-button',
      'Resume',
      () => this._resumeFollowing(),
      'Follow new lines again'
    );
    this._notice = h('span', 'jp-air-logs-notice');
    this._notice.setAttribute('role', 'status');
    status.append(this._summary, this._follow, this._resume, this._notice);

    // what is shown instead of lines
    this._message = h('div', 'jp-air-logs-message');
    this._messageTitle = h('p', 'jp-air-logs-message-title');
    this._messageDetail = h('p', 'jp-air-logs-message-detail');
    this._message.append(this._messageTitle, this._messageDetail);

    // the lines
    this._viewport = h('div', 'jp-air-logs-viewport');
    this._viewport.tabIndex = 0;
    this._viewport.setAttribute('role', 'log');
    this._viewport.setAttribute('aria-label', 'Log lines');
    this._spacer = h('div', 'jp-air-logs-spacer');
    this._rowsNode = h('div', 'jp-air-logs-rows');
    this._older = h('div', 'jp-air-logs-older');
    this._viewport.append(this._spacer, this._rowsNode);
    this._viewport.addEventListener('scroll', () => this._onScroll());
    this._rowsNode.addEventListener('click', event => this._onRowClick(event));

    // one line in full
    this._detail = h('div', 'jp-air-logs-detail');
    const detailHeader = h('div', 'jp-air-logs-detail-header');
    this._detailMeta = h('span', 'jp-air-logs-detail-meta');
    detailHeader.append(
      this._detailMeta,
      button('jp-air-logs-detail-close jp-air-logs-button', 'Close', () =>
        this._select(null)
      )
    );
    this._detailText = h('pre', 'jp-air-logs-detail-text');
    this._detail.append(detailHeader, this._detailText);
    this._detail.hidden = true;

    this.node.append(
      toolbar,
      status,
      this._older,
      this._message,
      this._viewport,
      this._detail
    );

    this._model.changed.connect(this._onChange, this);
    this._renderControls();
    this._renderState();
  }

  get model(): LogsModel {
    return this._model;
  }

  /** The viewport (scrolled by the user and the tests). */
  get viewport(): HTMLDivElement {
    return this._viewport;
  }

  /** How many rows are in the DOM. */
  get renderedRows(): number {
    return this._rowsNode.childElementCount;
  }

  /** Draw the rows on screen now (normally in an animation frame after a scroll). */
  renderRows(): void {
    this._frame = null;
    if (this.isDisposed) {
      return;
    }
    const start = clockNow();
    const lines = this._model.lines;
    const showLines = this._model.state === 'lines';
    const count = showLines ? lines.length : 0;
    const height = `${count * ROW_HEIGHT}px`;
    if (this._spacer.style.height !== height) {
      this._spacer.style.height = height;
    }
    const { start: first, end } = visibleRange(
      this._viewport.scrollTop,
      this._viewport.clientHeight,
      count
    );
    const needed = end - first;
    while (this._rows.length < needed) {
      this._rows.push(createRow());
    }
    const pattern = this._pattern;
    for (let i = 0; i < needed; i++) {
      const index = first + i;
      const line = lines[index];
      const previous = index > 0 ? lines[index - 1] : null;
      const attemptStart =
        previous !== null && previous.attempt !== line.attempt;
      updateRow(this._rows[i], line, index, pattern, attemptStart);
      this._rows[i].node.classList.toggle(
        'jp-mod-selected',
        line === this._selected
      );
    }
    const top = `${first * ROW_HEIGHT}px`;
    if (this._rowsNode.style.transform !== `translateY(${top})`) {
      this._rowsNode.style.transform = `translateY(${top})`;
    }
    const nodes = this._rows.slice(0, needed).map(row => row.node);
    if (
      nodes.length !== this._rowsNode.childElementCount ||
      nodes.some((node, i) => this._rowsNode.children[i] !== node)
    ) {
      this._rowsNode.replaceChildren(...nodes);
    }
    record(LOGS_RENDER_MEASURE, start, clockNow() - start);
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._model.changed.disconnect(this._onChange, this);
    this._model.stop();
    this._clearSearchTimer();
    if (this._frame !== null && typeof cancelAnimationFrame === 'function') {
      cancelAnimationFrame(this._frame);
    }
    super.dispose();
  }

  protected onShown(): void {
    this._model.start();
    this._scheduleRender();
  }

  protected onHidden(): void {
    this._model.stop();
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    super.onResize(msg);
    this._scheduleRender();
  }

  private _timeInput(
    name: string,
    text: string,
    title: string
  ): { label: HTMLLabelElement; input: HTMLInputElement } {
    const label = h('label', `jp-air-logs-time-filter jp-air-logs-${name}`);
    label.append(h('span', 'jp-air-logs-time-label', text));
    const input = h('input', `jp-air-logs-${name}-input`);
    input.type = 'datetime-local';
    input.step = '1';
    input.title = title;
    input.addEventListener('change', () => {
      const seconds = inputToSeconds(input.value);
      this._model.setFilters(
        name === 'since' ? { since: seconds } : { until: seconds }
      );
    });
    label.append(input);
    return { label, input };
  }

  private _onChange(_: LogsModel, change: ILogsChange): void {
    if (this.isDisposed) {
      return;
    }
    const viewport = this._viewport;
    this._renderControls();
    this._renderState();
    switch (change.kind) {
      case 'reset':
        this._select(null);
        this.renderRows();
        this._scrollToBottom();
        break;
      case 'append':
        this.renderRows();
        if (!this._model.paused && !this._model.hasNewer) {
          this._scrollToBottom();
        } else if (change.removed > 0) {
          this._scrollTo(viewport.scrollTop - change.removed * ROW_HEIGHT);
        }
        break;
      case 'prepend':
        this.renderRows();
        if (change.added > 0) {
          this._scrollTo(viewport.scrollTop + change.added * ROW_HEIGHT);
        }
        break;
      default:
        this._scheduleRender();
    }
  }

  /** Toolbar values from the model's filters and job. */
  private _renderControls(): void {
    const model = this._model;
    const filters = model.filters;
    const job = model.job;
    this.title.label = `Logs: ${job ? jobName(job) : model.jobId}`;
    this.title.caption = `Logs of job run ${model.jobId}`;

    // node choices
    const nodes = Math.max(model.nodes, filters.node + 1);
    const nodeKey = String(nodes);
    if (nodeKey !== this._nodeKey) {
      this._nodeKey = nodeKey;
      this._node.replaceChildren(
        ...Array.from({ length: nodes }, (_, i) => {
          const option = h('option', undefined, `Node ${i}`);
          option.value = String(i);
          return option;
        })
      );
    }
    if (this._node.value !== String(filters.node)) {
      this._node.value = String(filters.node);
    }
    setHidden(this._node, nodes <= 1);

    // attempt choices
    const attempts = Math.max(model.attempts, filters.attempt ?? 0);
    const attemptKey = String(attempts);
    if (attemptKey !== this._attemptKey) {
      this._attemptKey = attemptKey;
      const latest = h(
        'option',
        undefined,
        attempts > 1 ? `Latest attempt (${attempts})` : 'Latest attempt'
      );
      latest.value = '';
      this._attempt.replaceChildren(
        latest,
        ...Array.from({ length: attempts }, (_, i) => {
          const option = h('option', undefined, `Attempt ${i + 1}`);
          option.value = String(i + 1);
          return option;
        })
      );
    }
    const attemptValue =
      filters.attempt === null ? '' : String(filters.attempt);
    if (this._attempt.value !== attemptValue) {
      this._attempt.value = attemptValue;
    }
    setHidden(this._attempt, attempts <= 1 && filters.attempt === null);

    for (const [level, toggle] of this._levelToggles) {
      const on = filters.levels.includes(level);
      setAttr(toggle, 'aria-pressed', on ? 'true' : 'false');
      toggle.classList.toggle('jp-mod-active', on);
    }
    if (
      document.activeElement !== this._search &&
      this._search.value !== filters.q
    ) {
      this._search.value = filters.q;
    }
    for (const [input, seconds] of [
      [this._since.input, filters.since],
      [this._until.input, filters.until]
    ] as [HTMLInputElement, number | null][]) {
      if (
        inputToSeconds(input.value) !== seconds &&
        document.activeElement !== input
      ) {
        input.value = secondsToInput(seconds);
      }
    }
    this._pattern =
      filters.q === this._patternQuery
        ? this._pattern
        : searchPattern(filters.q);
    this._patternQuery = filters.q;

    const forbidden =
      model.state === 'forbidden' || model.state === 'not-found';
    setHidden(this._download, forbidden);
    if (!forbidden) {
      setAttr(this._download, 'href', this._downloadUrl(filters));
    }
    this._copyButton.disabled = model.lines.length === 0;
  }

  /** The status line and the message shown instead of lines. */
  private _renderState(): void {
    const model = this._model;
    const state = model.state;
    this.node.dataset.state = state;
    const count = model.lines.length;
    const status = model.jobStatus;
    const live = model.live;
    this.node.dataset.following = model.following ? 'true' : 'false';
    this.node.dataset.paused = model.paused && live ? 'true' : 'false';

    let summary = '';
    if (state === 'lines') {
      summary = `${count.toLocaleString()} line${count === 1 ? '' : 's'}${model.isFiltered ? ' matching' : ''}`;
      if (model.hasOlder) {
        summary += ' (scroll up for older)';
      }
      if (model.filters.attempt !== null || model.attempts > 1) {
        summary += ` · attempt ${model.attempt}`;
      }
      if (model.nodes > 1) {
        summary += ` · node ${model.filters.node}`;
      }
    }
    if (status) {
      summary += `${summary ? ' · ' : ''}job ${jobStatusLabel(status).toLowerCase()}`;
    }
    setText(this._summary, summary);

    const showFollow = live && (state === 'lines' || state === 'empty');
    const paused = model.paused && showFollow;
    setText(
      this._follow,
      !showFollow
        ? ''
        : paused
          ? 'Following paused — scroll to the bottom or click Resume'
          : model.following
            ? 'Following new lines'
            : ''
    );
    this._follow.classList.toggle('jp-mod-paused', paused);
    setHidden(this._follow, !this._follow.textContent);
    setHidden(this._resume, !paused);
    setText(this._older, model.loadingOlder ? 'Loading older lines…' : '');
    setHidden(this._older, !model.loadingOlder);

    let title = '';
    let detail = '';
    switch (state) {
      case 'loading':
        title = 'Loading the logs…';
        break;
      case 'forbidden':
        title = "You don't have access to these logs";
        detail = model.error ?? '';
        break;
      case 'not-found':
        title = `No job run ${model.jobId}`;
        detail = model.error ?? '';
        break;
      case 'purged':
        title = 'These logs were removed by the retention policy';
        detail =
          'Logs of job runs that ended long ago are purged (JUPYTER_AIR_LOG_RETENTION_DAYS, 60 days by default). ' +
          "Each attempt's MLflow run keeps its logs as artifacts (logs/attempt_K/node_N.log).";
        break;
      case 'error':
        title = 'Cannot read the logs';
        detail = model.error ?? '';
        break;
      case 'empty':
        title = model.isFiltered
          ? 'No lines match these filters'
          : live
            ? 'No output yet: new lines appear here as the job writes them'
            : 'This log is empty';
        detail = model.purged
          ? 'These logs were removed by the retention policy.'
          : '';
        break;
      default:
        break;
    }
    this._message.dataset.state = state;
    setText(this._messageTitle, title);
    setText(this._messageDetail, detail);
    setHidden(this._messageDetail, !detail);
    setHidden(this._message, !title);
    setHidden(this._viewport, state !== 'lines');
    const stale =
      state === 'lines' && model.error ? `Cannot follow: ${model.error}` : '';
    if (stale || !this._noticeUntil || this._noticeUntil < Date.now()) {
      setText(this._notice, stale);
    }
  }

  private _scheduleRender(): void {
    if (this._frame !== null) {
      return;
    }
    if (typeof requestAnimationFrame === 'function') {
      this._frame = requestAnimationFrame(() => this.renderRows());
    } else {
      this.renderRows();
    }
  }

  private _scrollTo(top: number): void {
    const viewport = this._viewport;
    const max = Math.max(0, viewport.scrollHeight - viewport.clientHeight);
    const next = Math.max(0, Math.min(max > 0 ? max : top, top));
    this._expectedTop = next;
    viewport.scrollTop = next;
    this._lastTop = viewport.scrollTop;
    this.renderRows();
  }

  private _scrollToBottom(): void {
    this._scrollTo(this._model.lines.length * ROW_HEIGHT);
  }

  private _onScroll(): void {
    const viewport = this._viewport;
    const top = viewport.scrollTop;
    const programmatic =
      this._expectedTop !== null && Math.abs(top - this._expectedTop) < 1;
    this._expectedTop = null;
    const atBottom =
      top + viewport.clientHeight >= viewport.scrollHeight - ROW_HEIGHT / 2;
    if (!programmatic) {
      if (atBottom) {
        this._model.reachedBottom();
      } else if (top < this._lastTop - 1) {
        this._model.pause();
      }
    }
    if (top < ROW_HEIGHT * 5 && this._model.hasOlder) {
      void this._model.loadOlder();
    }
    this._lastTop = top;
    this._scheduleRender();
  }

  private _resumeFollowing(): void {
    this._model.resume();
    this._scrollToBottom();
  }

  private _searchSoon(): void {
    this._clearSearchTimer();
    this._searchTimer = this._timers.setTimeout(() => {
      this._searchTimer = null;
      this._applySearch();
    }, SEARCH_DEBOUNCE_MS);
  }

  private _applySearch(): void {
    this._clearSearchTimer();
    this._model.setFilters({ q: this._search.value });
  }

  private _clearSearchTimer(): void {
    if (this._searchTimer !== null) {
      this._timers.clearTimeout(this._searchTimer);
      this._searchTimer = null;
    }
  }

  private _onRowClick(event: MouseEvent): void {
    const target = event.target as HTMLElement | null;
    const rowNode = target?.closest('.jp-air-logs-row') as HTMLElement | null;
    if (!rowNode) {
      return;
    }
    const selection =
      typeof window !== 'undefined' ? window.getSelection?.() : null;
    if (selection && selection.toString()) {
      return; // the user is selecting text
    }
    const index = Number(rowNode.dataset.index);
    const line = this._model.lines[index];
    this._select(line && line !== this._selected ? line : null);
  }

  private _select(line: ILogLine | null): void {
    this._selected = line;
    setHidden(this._detail, line === null);
    if (line !== null) {
      setText(
        this._detailMeta,
        `${line.t} · ${levelLabel(String(line.level))} · ${line.stream} · attempt ${line.attempt} · node ${line.node}`
      );
      setText(this._detailText, stripAnsi(String(line.text ?? '')));
    }
    this._scheduleRender();
  }

  private async _copyLines(): Promise<void> {
    const lines = this._model.lines;
    if (lines.length === 0) {
      return;
    }
    const text = lines.map(lineAsText).join('\n') + '\n';
    try {
      await this._copy(text);
      this._showNotice(
        `Copied ${lines.length.toLocaleString()} line${lines.length === 1 ? '' : 's'}`
      );
    } catch (error) {
      this._showNotice(
        `Cannot copy: ${error instanceof Error ? error.message : String(error)}`
      );
    }
  }

  private _showNotice(text: string): void {
    setText(this._notice, text);
    this._noticeUntil = Date.now() + 3000;
    this._timers.setTimeout(() => {
      if (!this.isDisposed && this._notice.textContent === text) {
        this._noticeUntil = 0;
        setText(this._notice, '');
      }
    }, 3000);
  }

  private readonly _model: LogsModel;
  private readonly _copy: CopyText;
  private readonly _timers: ITimers;
  private readonly _downloadUrl: (filters: LogsModel['filters']) => string;
  private readonly _search: HTMLInputElement;
  private readonly _node: HTMLSelectElement;
  private readonly _attempt: HTMLSelectElement;
  private readonly _levelToggles = new Map<LogLevel, HTMLButtonElement>();
  private readonly _since: { label: HTMLLabelElement; input: HTMLInputElement };
  private readonly _until: { label: HTMLLabelElement; input: HTMLInputElement };
  private readonly _copyButton: HTMLButtonElement;
  private readonly _download: HTMLAnchorElement;
  private readonly _summary: HTMLSpanElement;
  private readonly _follow: HTMLSpanElement;
  private readonly _resume: HTMLButtonElement;
  private readonly _notice: HTMLSpanElement;
  private readonly _message: HTMLDivElement;
  private readonly _messageTitle: HTMLParagraphElement;
  private readonly _messageDetail: HTMLParagraphElement;
  private readonly _viewport: HTMLDivElement;
  private readonly _spacer: HTMLDivElement;
  private readonly _rowsNode: HTMLDivElement;
  private readonly _older: HTMLDivElement;
  private readonly _detail: HTMLDivElement;
  private readonly _detailMeta: HTMLSpanElement;
  private readonly _detailText: HTMLPreElement;
  private readonly _rows: ILineRow[] = [];
  private _selected: ILogLine | null = null;
  private _pattern: RegExp | null = null;
  private _patternQuery = '';
  private _nodeKey = '';
  private _attemptKey = '';
  private _frame: number | null = null;
  private _expectedTop: number | null = null;
  private _lastTop = 0;
  private _searchTimer: unknown = null;
  private _noticeUntil = 0;
}

export namespace LogsView {
  export interface IOptions {
    model: LogsModel;
    /** Copies to the clipboard; defaults to `navigator.clipboard` with a fallback. */
    copyText?: CopyText;
    /** The download URL of filters; defaults to the server's. */
    downloadUrl?: (filters: LogsModel['filters']) => string;
    timers?: ITimers;
  }
}
