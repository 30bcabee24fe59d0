/**
 * One log line as a row of the Logs view: time, level badge, stream marker, and the text, its
 * ANSI colours as spans and the search matches as `<mark>`s. Everything is `textContent`:
 * `<img src=x onerror=…>` in a log shows as those characters.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { h } from '../common/dom';
import { Wordings, wordingOf } from '../common/text';
import { IAnsiSegment, parseAnsi, stripAnsi } from './ansi';
import { ILogLine } from './types';

/** Characters of a line put in its row (the row shows far fewer; the rest is in the tooltip). */
export const MAX_SHOWN_CHARS = 2000;
/** Characters of a line in its tooltip. */
export const MAX_TITLE_CHARS = 5000;

/** The level as the clipboard and downloads write it: `INFO`, `WARN`, `ERROR`. */
export function levelLabel(level: string): string {
  switch (level) {
    case 'error':
      return 'ERROR';
    case 'warning':
      return 'WARN';
    case 'info':
      return 'INFO';
    default:
      return String(level || '').toUpperCase();
  }
}

/** The levels' badges on a row, in the view's language. */
const LEVEL_BADGES: Wordings = {
  error: trans => trans.__('ERROR'),
  warning: trans => trans.__('WARN'),
  info: trans => trans.__('INFO')
};

/** The level's badge on a row, in the view's language (an unknown one as `levelLabel`). */
export function levelBadge(trans: TranslationBundle, level: string): string {
  return wordingOf(trans, LEVEL_BADGES, level) ?? levelLabel(level);
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** A line's time, local: `14:03:21.123`; the ISO string when it does not parse. */
export function formatLineTime(t: string): string {
  const d = new Date(t);
  if (!Number.isFinite(d.getTime())) {
    return String(t ?? '');
  }
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** A line as text for the clipboard: `ERROR 2025-11-29T10:13:21.002Z err text` (no ANSI). */
export function lineAsText(line: ILogLine): string {
  return `${levelLabel(line.level).padEnd(5)} ${line.t} ${line.stream === 'stderr' ? 'err' : 'out'} ${stripAnsi(String(line.text ?? ''))}`;
}

/** A regular expression for `q` (literal, any case), `null` for no search. */
export function searchPattern(q: string): RegExp | null {
  if (!q) {
    return null;
  }
  const escaped = q.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  try {
    return new RegExp(escaped, 'giu');
  } catch {
    return new RegExp(escaped, 'gi');
  }
}

/** Where `pattern` matches `text`: [start, end) pairs. */
export function matchRanges(
  text: string,
  pattern: RegExp | null
): [number, number][] {
  if (pattern === null) {
    return [];
  }
  const ranges: [number, number][] = [];
  pattern.lastIndex = 0;
  for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
    if (m[0].length === 0) {
      pattern.lastIndex++;
      continue;
    }
    ranges.push([m.index, m.index + m[0].length]);
  }
  return ranges;
}

/** The class of a segment's span (its styles), `''` for plain text. */
function segmentClass(segment: IAnsiSegment): string {
  const classes: string[] = [];
  if (segment.bold) {
    classes.push('jp-air-ansi-bold');
  }
  if (segment.dim) {
    classes.push('jp-air-ansi-dim');
  }
  if (segment.italic) {
    classes.push('jp-air-ansi-italic');
  }
  if (segment.underline) {
    classes.push('jp-air-ansi-underline');
  }
  return classes.join(' ');
}

/**
 * A segment's colour as CSS: one of the 16 terminal colours is the theme's palette variable
 * (`var(--jp-air-ansi-1)`, see logs.css), others (256 colours, true colour) their `rgb(…)`.
 */
function segmentColor(color: number | string | null): string | null {
  if (typeof color === 'number') {
    return `var(--jp-air-ansi-${color})`;
  }
  return typeof color === 'string' ? color : null;
}

/** A piece of a segment: a text node, or a `<mark>` for a match. */
function piece(text: string, match: boolean): Node {
  return match
    ? h('mark', 'jp-air-logs-match', text)
    : document.createTextNode(text);
}

/**
 * Put a line's text in `el`: ANSI segments as spans, matches of `pattern` as marks, at most
 * `MAX_SHOWN_CHARS` characters (then `…`).
 */
export function renderLineText(
  el: HTMLElement,
  text: string,
  pattern: RegExp | null
): void {
  let segments = parseAnsi(String(text ?? ''));
  let shown = 0;
  let cut = false;
  const kept: IAnsiSegment[] = [];
  for (const segment of segments) {
    if (shown + segment.text.length > MAX_SHOWN_CHARS) {
      kept.push({
        ...segment,
        text: segment.text.slice(0, MAX_SHOWN_CHARS - shown)
      });
      cut = true;
      break;
    }
    kept.push(segment);
    shown += segment.text.length;
  }
  segments = kept;
  const plainText = segments.map(s => s.text).join('');
  const ranges = matchRanges(plainText, pattern);
  const nodes: Node[] = [];
  let offset = 0;
  let r = 0;
  for (const segment of segments) {
    const start = offset;
    const end = offset + segment.text.length;
    offset = end;
    const parts: Node[] = [];
    let at = start;
    while (at < end) {
      while (r < ranges.length && ranges[r][1] <= at) {
        r++;
      }
      const range = r < ranges.length ? ranges[r] : null;
      if (range !== null && range[0] <= at) {
        const stop = Math.min(end, range[1]);
        parts.push(piece(plainText.slice(at, stop), true));
        at = stop;
      } else {
        const stop = range !== null ? Math.min(end, range[0]) : end;
        parts.push(piece(plainText.slice(at, stop), false));
        at = stop;
      }
    }
    const className = segmentClass(segment);
    const fg = segmentColor(segment.fg);
    const bg = segmentColor(segment.bg);
    if (!className && fg === null && bg === null) {
      nodes.push(...parts);
    } else {
      const span = h('span', className || undefined);
      // the colours go in custom properties that logs.css applies (.jp-air-ansi-fg, -bg)
      if (fg !== null) {
        span.classList.add('jp-air-ansi-fg');
        span.style.setProperty('--jp-air-ansi-fg', fg);
      }
      if (bg !== null) {
        span.classList.add('jp-air-ansi-bg');
        span.style.setProperty('--jp-air-ansi-bg', bg);
      }
      span.append(...parts);
      nodes.push(span);
    }
  }
  if (cut) {
    nodes.push(h('span', 'jp-air-logs-cut', '…'));
  }
  el.replaceChildren(...nodes);
}

/** A row's elements. */
export interface ILineRow {
  /** The view's strings. */
  trans: TranslationBundle;
  node: HTMLDivElement;
  time: HTMLSpanElement;
  level: HTMLSpanElement;
  stream: HTMLSpanElement;
  attempt: HTMLSpanElement;
  text: HTMLSpanElement;
  /** The line shown and the search it was drawn with (redrawn only when either changes). */
  line: ILogLine | null;
  pattern: RegExp | null;
  index: number;
}

/** An empty row. */
export function createRow(trans: TranslationBundle): ILineRow {
  const node = h('div', 'jp-air-logs-row');
  const time = h('span', 'jp-air-logs-time');
  const level = h('span', 'jp-air-logs-level');
  const stream = h('span', 'jp-air-logs-stream');
  const attempt = h('span', 'jp-air-logs-attempt');
  const text = h('span', 'jp-air-logs-text');
  node.append(time, level, stream, attempt, text);
  return {
    trans,
    node,
    time,
    level,
    stream,
    attempt,
    text,
    line: null,
    pattern: null,
    index: -1
  };
}

/**
 * Show `line` in `row` (nothing to do when it already shows it with the same search).
 * `attemptStart`: the first line of a later attempt than the line before it (marked).
 */
export function updateRow(
  row: ILineRow,
  line: ILogLine,
  index: number,
  pattern: RegExp | null,
  attemptStart: boolean
): void {
  const trans = row.trans;
  const marker = attemptStart ? trans.__('attempt %1', line.attempt) : '';
  row.index = index;
  row.node.dataset.index = String(index);
  if (row.line === line && row.pattern === pattern) {
    row.node.classList.toggle('jp-mod-attempt-start', attemptStart);
    row.attempt.textContent = marker;
    return;
  }
  row.line = line;
  row.pattern = pattern;
  const level = String(line.level);
  row.node.dataset.level = level;
  row.node.dataset.stream = String(line.stream);
  row.node.classList.toggle('jp-mod-attempt-start', attemptStart);
  row.time.textContent = formatLineTime(line.t);
  row.time.title = String(line.t);
  row.level.textContent = levelBadge(trans, level);
  const stderr = line.stream === 'stderr';
  row.stream.textContent = stderr ? trans.__('err') : '';
  row.stream.title = stderr ? trans.__('Written on stderr') : '';
  row.attempt.textContent = marker;
  renderLineText(row.text, String(line.text ?? ''), pattern);
  const plainText = stripAnsi(String(line.text ?? ''));
  row.text.title =
    plainText.length > MAX_TITLE_CHARS
      ? trans.__(
          '%1… (%2 characters: click to see the whole line)',
          plainText.slice(0, MAX_TITLE_CHARS),
          plainText.length
        )
      : plainText;
}
