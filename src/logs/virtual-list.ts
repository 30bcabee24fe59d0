/**
 * The Logs view's lines as a virtual list: every row has the same height and only the rows on
 * screen (plus a few either side, see virtual.ts) are in the DOM, so 50,000 lines held scroll
 * like 50. A spacer as tall as every line gives the scroll bar its size; the rows drawn are moved
 * to where the viewport looks.
 *
 * Scrolling up pauses following, back at the bottom follows again, near the top older lines
 * load. A click on a row shows its line in full below the list (line-detail.ts). Each rendering
 * of the rows is a `jupyter-air:logs-render` performance measure.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { h } from '../common/dom';
import { now as clockNow, record } from '../common/timing';
import { ILineRow, createRow, updateRow } from './line';
import { LineDetail } from './line-detail';
import { ILogsChange, LogsModel } from './model';
import { ILogLine } from './types';
import { ROW_HEIGHT, visibleRange } from './virtual';

/** The performance measure of one rendering of the rows. */
export const LOGS_RENDER_MEASURE = 'jupyter-air:logs-render';

export class LogsList {
  /** `pattern`: the search, whose matches the rows mark. */
  constructor(
    model: LogsModel,
    trans: TranslationBundle,
    pattern: () => RegExp | null
  ) {
    this._model = model;
    this._trans = trans;
    this._pattern = pattern;
    this.viewport.tabIndex = 0;
    this.viewport.setAttribute('role', 'log');
    this.viewport.setAttribute('aria-label', trans.__('Log lines'));
    this.viewport.append(this._spacer, this._rowsNode);
    this.viewport.addEventListener('scroll', () => this._onScroll());
    this._rowsNode.addEventListener('click', event => this._onRowClick(event));
    this.detail = new LineDetail(trans, () => this.select(null));
  }

  /** The scrolling element (scrolled by the user and the tests). */
  readonly viewport = h('div', 'jp-air-logs-viewport');

  /** One line in full, below the list. */
  readonly detail: LineDetail;

  /** How many rows are in the DOM. */
  get renderedRows(): number {
    return this._rowsNode.childElementCount;
  }

  /** Keep the scroll position right for what changed, and draw the rows. */
  changed(change: ILogsChange): void {
    const viewport = this.viewport;
    switch (change.kind) {
      case 'reset':
        this.select(null);
        this.renderRows();
        this.scrollToBottom();
        break;
      case 'append':
        this.renderRows();
        if (!this._model.paused && !this._model.hasNewer) {
          this.scrollToBottom();
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
        this.scheduleRender();
    }
  }

  /** Draw the rows on screen now (normally in an animation frame after a scroll). */
  renderRows(): void {
    this._frame = null;
    const start = clockNow();
    const lines = this._model.lines;
    const count = this._model.state === 'lines' ? lines.length : 0;
    const height = `${count * ROW_HEIGHT}px`;
    if (this._spacer.style.height !== height) {
      this._spacer.style.height = height;
    }
    const { start: first, end } = visibleRange(
      this.viewport.scrollTop,
      this.viewport.clientHeight,
      count
    );
    const needed = end - first;
    while (this._rows.length < needed) {
      this._rows.push(createRow(this._trans));
    }
    const pattern = this._pattern();
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
    const transform = `translateY(${first * ROW_HEIGHT}px)`;
    if (this._rowsNode.style.transform !== transform) {
      this._rowsNode.style.transform = transform;
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

  /** Draw the rows in the next animation frame (once, however often it is asked). */
  scheduleRender(): void {
    if (this._frame !== null) {
      return;
    }
    if (typeof requestAnimationFrame === 'function') {
      this._frame = requestAnimationFrame(() => this.renderRows());
    } else {
      this.renderRows();
    }
  }

  scrollToBottom(): void {
    this._scrollTo(this._model.lines.length * ROW_HEIGHT);
  }

  /** Show a line in full below the list (`null`: close it). */
  select(line: ILogLine | null): void {
    this._selected = line;
    this.detail.show(line);
    this.scheduleRender();
  }

  dispose(): void {
    if (this._frame !== null && typeof cancelAnimationFrame === 'function') {
      cancelAnimationFrame(this._frame);
    }
    this._frame = null;
  }

  private _scrollTo(top: number): void {
    const viewport = this.viewport;
    const max = Math.max(0, viewport.scrollHeight - viewport.clientHeight);
    const next = Math.max(0, Math.min(max > 0 ? max : top, top));
    this._expectedTop = next;
    viewport.scrollTop = next;
    this._lastTop = viewport.scrollTop;
    this.renderRows();
  }

  private _onScroll(): void {
    const viewport = this.viewport;
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
    this.scheduleRender();
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
    this.select(line && line !== this._selected ? line : null);
  }

  private readonly _model: LogsModel;
  private readonly _trans: TranslationBundle;
  private readonly _pattern: () => RegExp | null;
  private readonly _spacer = h('div', 'jp-air-logs-spacer');
  private readonly _rowsNode = h('div', 'jp-air-logs-rows');
  private readonly _rows: ILineRow[] = [];
  private _selected: ILogLine | null = null;
  private _frame: number | null = null;
  private _expectedTop: number | null = null;
  private _lastTop = 0;
}
