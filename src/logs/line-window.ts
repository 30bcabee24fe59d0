/**
 * The lines a Logs view holds: a window of the log between two cursors of the logs API, at most
 * `maxLines` long. Pages read at the end (following, the next page) drop the oldest lines; pages
 * read at the start (older lines) drop the newest. The cursor before the first line kept (`prev`)
 * and after the last (`next`) always say where to read again, so a dropped line can be read back.
 * No I/O here: the model (model.ts) reads the pages and hands them over.
 */
import { ILogLine, ILogPage } from './types';

/** How a page changed the window. */
export interface IWindowChange {
  /** Lines added (at the end, or at the start). */
  added: number;
  /** Lines dropped at the other end to stay within `maxLines`. */
  removed: number;
}

export class LineWindow {
  constructor(maxLines: number) {
    this._maxLines = maxLines;
  }

  /** The lines held, oldest first. */
  get lines(): readonly ILogLine[] {
    return this._lines;
  }

  /** The cursor before the first line held (`before=`), `null` at the start of the log. */
  get prev(): string | null {
    return this._prev;
  }

  /** The cursor after the last line held (`after=`), `null` before the first read. */
  get next(): string | null {
    return this._next;
  }

  /** Whether no line will ever be written after the last one held. */
  get complete(): boolean {
    return this._complete;
  }

  /** Whether newer lines than the last held exist for sure (dropped to hold older ones). */
  get endTrimmed(): boolean {
    return this._endTrimmed;
  }

  /** Hold nothing (a new read from the tail is coming). */
  clear(): void {
    this._lines = [];
    this._prev = null;
    this._next = null;
    this._complete = false;
    this._endTrimmed = false;
  }

  /** Hold the tail of the log: the lines of `page` and its cursors. */
  reset(page: ILogPage): void {
    this._lines = linesOf(page).slice();
    this._prev = page.prev ?? null;
    this._next = page.next;
    this._complete = page.complete === true;
    this._endTrimmed = false;
  }

  /** Add the lines after the last one held (dropping the oldest beyond `maxLines`). */
  append(page: ILogPage): IWindowChange {
    const lines = linesOf(page);
    const wasEmpty = this._lines.length === 0;
    if (lines.length) {
      this._lines.push(...lines);
    }
    if (page.next) {
      this._next = page.next;
    }
    this._complete = page.complete === true;
    if (!page.more) {
      this._endTrimmed = false;
    }
    let removed = 0;
    if (this._lines.length > this._maxLines) {
      removed = this._lines.length - this._maxLines;
      this._prev = this._lines[removed - 1].pos;
      this._lines.splice(0, removed);
    } else if (wasEmpty && lines.length && this._prev === null) {
      this._prev = page.prev ?? null;
    }
    return { added: lines.length, removed };
  }

  /** Add the lines before the first one held (dropping the newest beyond `maxLines`). */
  prepend(page: ILogPage): IWindowChange {
    const lines = linesOf(page);
    this._prev = page.prev ?? null;
    this._lines = lines.concat(this._lines);
    let removed = 0;
    if (this._lines.length > this._maxLines) {
      removed = this._lines.length - this._maxLines;
      this._lines.length = this._maxLines;
      this._next = this._lines[this._lines.length - 1].pos;
      this._endTrimmed = true;
      this._complete = false;
    }
    return { added: lines.length, removed };
  }

  private readonly _maxLines: number;
  private _lines: ILogLine[] = [];
  private _prev: string | null = null;
  private _next: string | null = null;
  private _complete = false;
  private _endTrimmed = false;
}

/** The lines of a page (none when the answer has no list). */
function linesOf(page: ILogPage): ILogLine[] {
  return Array.isArray(page.lines) ? page.lines : [];
}
