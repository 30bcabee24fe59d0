/**
 * Test helpers shared by the specs: advancing jest's fake timers (with the promises they settle),
 * what a poller sends over a stretch of them, clicks, choosing in a form control, lookups in a view, a recording stand-in for `globalThis.fetch` (the API modules call the real fetch), markup
 * that must only ever show as text, commands that record their calls, and whether an element
 * is shown.
 */

import { loadTranslation } from '../common/translation';

/** The strings as written (what a view shows without a translator). */
export const trans = loadTranslation();

/** User data that would run script if a view parsed it as HTML. */
export const HOSTILE = '<img src=x onerror=alert(1)>';

/** Advance the fake timers by `ms`, settling the promises the timers resolve on the way. */
export async function advance(ms: number): Promise<void> {
  await jest.advanceTimersByTimeAsync(ms);
}

/** Over the next `ms` of fake time nothing more is sent: `count()` stays as it was. */
export async function expectNoCallFor(
  count: () => number,
  ms: number
): Promise<void> {
  const before = count();
  await advance(ms);
  expect(count()).toBe(before);
}

/** The next call goes out `ms` from now, not a millisecond before. */
export async function expectNextCallAfter(
  count: () => number,
  ms: number
): Promise<void> {
  const before = count();
  await expectNoCallFor(count, ms - 1);
  await advance(1);
  expect(count()).toBe(before + 1);
}

/** Hidden, `widget` sends nothing over `ms`; shown again, it asks at once (one call). */
export async function expectQuietWhileHidden(
  widget: { hide(): void; show(): void },
  count: () => number,
  ms: number
): Promise<void> {
  const before = count();
  widget.hide();
  await expectNoCallFor(count, ms);
  widget.show();
  await advance(0);
  expect(count()).toBe(before + 1);
}

/**
 * Click `el` as a user does, with `init`'s modifier keys or button: whether the view took the
 * click (prevented its default) rather than leaving it to the browser (a new tab on a link).
 */
export function click(el: Element, init: MouseEventInit = {}): boolean {
  const event = new MouseEvent('click', {
    bubbles: true,
    cancelable: true,
    ...init
  });
  el.dispatchEvent(event);
  return event.defaultPrevented;
}

/** The labels of a `<select>`'s options, in order. */
export function optionLabels(select: HTMLSelectElement): (string | null)[] {
  return Array.from(select.options).map(option => option.textContent);
}

/** Set a form control's value as a user does (its `change` event), and settle what that starts. */
export async function choose(
  control: HTMLSelectElement | HTMLInputElement,
  value: string
): Promise<void> {
  control.value = value;
  control.dispatchEvent(new Event('change'));
  await advance(0);
}

/**
 * For every test of the calling `describe`: `globalThis.fetch` answers `body` (status 200) and
 * records each request in the returned array (emptied before each test); restored after.
 */
export function stubFetch(body: string): Request[] {
  const requests: Request[] = [];
  const realFetch = globalThis.fetch;
  beforeEach(() => {
    requests.length = 0;
    globalThis.fetch = (async (request: Request) => {
      requests.push(request);
      return new Response(body, { status: 200 });
    }) as typeof fetch;
  });
  afterEach(() => {
    globalThis.fetch = realFetch;
  });
  return requests;
}

/** Commands whose `execute` records each call (the command's id and args) in `calls`. */
export function recordingCommands(calls: [string, any][]): {
  execute: (id: string, args?: any) => Promise<void>;
} {
  return {
    execute: async (id: string, args?: any) => {
      calls.push([id, args]);
    }
  };
}

/**
 * Lookups in the view under test (`root()`, read at each call: a new view per test): `q` its
 * first match of a selector, `all` every match, `text` the first match's text (`null`: none).
 */
export function finders(root: () => Element): {
  q: <T extends HTMLElement = HTMLElement>(selector: string) => T;
  all: (selector: string) => HTMLElement[];
  text: (selector: string) => string | null;
} {
  const q = <T extends HTMLElement = HTMLElement>(selector: string): T =>
    root().querySelector(selector) as T;
  return {
    q,
    all: selector => Array.from(root().querySelectorAll<HTMLElement>(selector)),
    text: selector => q(selector)?.textContent ?? null
  };
}

/** Whether an element and all its ancestors are shown (none `hidden`). */
export function shown(el: Element | null): boolean {
  if (!el) {
    return false;
  }
  for (let e: Element | null = el; e; e = e.parentElement) {
    if ((e as HTMLElement).hidden) {
      return false;
    }
  }
  return true;
}
