/**
 * ANSI escape codes in log lines: colours and styles (SGR) become segments of text with a style,
 * everything else (cursor moves, titles, other control characters) is dropped. Nothing here makes
 * markup: the Logs view puts each segment's text in a span with `textContent`, its colour as the
 * theme's palette variable (the 16 standard colours) or a numeric `rgb()` (256 colours, true
 * colour).
 */

/** How a piece of a line is drawn. */
export interface IAnsiStyle {
  /** Foreground: 0–15 (the palette), or an `rgb(…)` colour. */
  fg: number | string | null;
  bg: number | string | null;
  bold: boolean;
  dim: boolean;
  italic: boolean;
  underline: boolean;
}

/** A piece of a line with one style. */
export interface IAnsiSegment extends IAnsiStyle {
  text: string;
}

/* eslint-disable no-control-regex */
/** Escape sequences: CSI (`ESC [ … final`), OSC (`ESC ] … BEL|ST`), and two-byte escapes. */
const ESCAPE =
  /\x1b\[([0-?]*)[ -/]*([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]?|\x9b[0-?]*[ -/]*[@-~]/g;
/** Control characters other than tab (shown as nothing on a terminal). */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/g;
/** Whether a line has anything to parse (most do not). */
const SPECIAL = /[\x00-\x08\x0b-\x1f\x7f\x9b]/;
/* eslint-enable no-control-regex */

/** The text of a line without escape sequences and control characters. */
export function stripAnsi(text: string): string {
  if (!SPECIAL.test(text)) {
    return text;
  }
  return text.replace(ESCAPE, '').replace(CONTROL, '');
}

const CUBE = [0, 95, 135, 175, 215, 255];

/** A colour of the 256-colour palette: 0–15 as the index, others as `rgb(…)`. */
function color256(n: number): number | string | null {
  if (!Number.isInteger(n) || n < 0 || n > 255) {
    return null;
  }
  if (n < 16) {
    return n;
  }
  if (n < 232) {
    const i = n - 16;
    const r = CUBE[Math.floor(i / 36)];
    const g = CUBE[Math.floor(i / 6) % 6];
    const b = CUBE[i % 6];
    return `rgb(${r}, ${g}, ${b})`;
  }
  const v = 8 + (n - 232) * 10;
  return `rgb(${v}, ${v}, ${v})`;
}

function byte(value: number | undefined): number | null {
  return value !== undefined &&
    Number.isInteger(value) &&
    value >= 0 &&
    value <= 255
    ? value
    : null;
}

function plain(): IAnsiStyle {
  return {
    fg: null,
    bg: null,
    bold: false,
    dim: false,
    italic: false,
    underline: false
  };
}

/** Apply one SGR sequence's parameters (`1;31`, `38;5;208`, `38;2;255;0;0`) to a style. */
function applySgr(style: IAnsiStyle, params: string): void {
  const codes =
    params === ''
      ? [0]
      : params.split(/[;:]/).map(p => (p === '' ? 0 : Number(p)));
  for (let i = 0; i < codes.length; i++) {
    const code = codes[i];
    if (code === 0) {
      Object.assign(style, plain());
    } else if (code === 1) {
      style.bold = true;
    } else if (code === 2) {
      style.dim = true;
    } else if (code === 3) {
      style.italic = true;
    } else if (code === 4) {
      style.underline = true;
    } else if (code === 22) {
      style.bold = false;
      style.dim = false;
    } else if (code === 23) {
      style.italic = false;
    } else if (code === 24) {
      style.underline = false;
    } else if (code >= 30 && code <= 37) {
      style.fg = code - 30;
    } else if (code === 39) {
      style.fg = null;
    } else if (code >= 40 && code <= 47) {
      style.bg = code - 40;
    } else if (code === 49) {
      style.bg = null;
    } else if (code >= 90 && code <= 97) {
      style.fg = code - 90 + 8;
    } else if (code >= 100 && code <= 107) {
      style.bg = code - 100 + 8;
    } else if (code === 38 || code === 48) {
      let color: number | string | null = null;
      if (codes[i + 1] === 5) {
        color = color256(codes[i + 2]);
        i += 2;
      } else if (codes[i + 1] === 2) {
        const [r, g, b] = [
          byte(codes[i + 2]),
          byte(codes[i + 3]),
          byte(codes[i + 4])
        ];
        color =
          r !== null && g !== null && b !== null
            ? `rgb(${r}, ${g}, ${b})`
            : null;
        i += 4;
      } else {
        continue;
      }
      if (code === 38) {
        style.fg = color;
      } else {
        style.bg = color;
      }
    }
  }
}

/** A line as styled segments (one unstyled segment for a line without escape codes). */
export function parseAnsi(text: string): IAnsiSegment[] {
  if (!SPECIAL.test(text)) {
    return [{ text, ...plain() }];
  }
  const segments: IAnsiSegment[] = [];
  const style = plain();
  const push = (piece: string) => {
    const clean = piece.replace(CONTROL, '');
    if (!clean) {
      return;
    }
    const last = segments[segments.length - 1];
    if (
      last &&
      last.fg === style.fg &&
      last.bg === style.bg &&
      last.bold === style.bold &&
      last.dim === style.dim &&
      last.italic === style.italic &&
      last.underline === style.underline
    ) {
      last.text += clean; // same style: one segment
    } else {
      segments.push({ text: clean, ...style });
    }
  };
  let last = 0;
  ESCAPE.lastIndex = 0;
  for (let m = ESCAPE.exec(text); m !== null; m = ESCAPE.exec(text)) {
    push(text.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[2] === 'm' && m[0].startsWith('\x1b[') && /^[0-9;:]*$/.test(m[1])) {
      applySgr(style, m[1]);
    }
    if (m[0].length === 0) {
      ESCAPE.lastIndex++; // never loop on an empty match
    }
  }
  push(text.slice(last));
  return segments;
}
