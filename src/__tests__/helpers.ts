/**
 * Test helpers shared by the specs: advancing jest's fake timers (with the promises they settle),
 * a recording stand-in for `globalThis.fetch` (the API modules call the real fetch), markup
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
