/**
 * Helpers shared by the browser tests and the benchmarks (../bench): the notebook files they
 * upload, running JupyterLab commands (from code or the palette), the API requests a page sends,
 * and markup that must only ever show as text. Not a spec: Playwright's test match skips it.
 */
import type { IJupyterLabPageFixture } from '@jupyterlab/galata';
import { expect, type Page } from '@playwright/test';

/** Galata's page fixture or a plain Playwright page (Galata's replaces `goto`). */
type AnyPage = Omit<Page, 'goto'>;

/** User data that would run script if the frontend parsed it as HTML. */
export const HOSTILE = '<img src=x onerror=alert(1)>';

/**
 * A Python 3 notebook with these code cells (written as a file: typing code would be
 * auto-indented); no cells by default.
 */
export function notebookJSON(sources: string[] = []): string {
  return JSON.stringify({
    cells: sources.map(source => ({
      cell_type: 'code',
      source,
      metadata: {},
      outputs: [],
      execution_count: null
    })),
    metadata: {
      kernelspec: {
        name: 'python3',
        display_name: 'Python 3',
        language: 'python'
      }
    },
    nbformat: 4,
    nbformat_minor: 5
  });
}

/** Write a notebook with these code cells at `path` (under the test's tmpPath) and open it. */
export async function openNewNotebook(
  page: IJupyterLabPageFixture,
  path: string,
  sources: string[] = []
): Promise<void> {
  await page.contents.uploadContent(notebookJSON(sources), 'text', path);
  await page.notebook.openByPath(path);
}

/** Run a JupyterLab command in the page (as a plugin would, no UI involved). */
export async function execute(
  page: AnyPage,
  command: string,
  args: Record<string, unknown> = {}
): Promise<void> {
  await page.evaluate(
    async ({ command, args }) => {
      await (window as any).jupyterapp.commands.execute(command, args);
    },
    { command, args }
  );
}

/** Run a command from the command palette: filter by `query`, click the item `label`. */
export async function runFromPalette(
  page: AnyPage,
  query: string,
  label: string
): Promise<void> {
  await page.keyboard.press('Control+Shift+C');
  const palette = page.locator('#command-palette');
  await expect(palette).toBeVisible();
  await palette.locator('input').fill(query);
  await palette.locator('.lm-CommandPalette-item', { hasText: label }).click();
}

/**
 * Open JupyterLab at `url` in a plain Playwright page (e.g. under a JupyterHub-style base URL,
 * which Galata's fixtures do not handle) and wait until its layout is restored.
 */
export async function openLab(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.waitForFunction(() => (window as any).jupyterapp?.started);
  await page.evaluate(async () => {
    const app = (window as any).jupyterapp;
    await app.started;
    await app.restored;
  });
}

/** The paths of the requests the page sends from now on whose path contains `part` (growing). */
export function requestPaths(page: AnyPage, part: string): string[] {
  const paths: string[] = [];
  page.on('request', request => {
    const path = new URL(request.url()).pathname;
    if (path.includes(part)) {
      paths.push(path);
    }
  });
  return paths;
}

/** Fail on any browser dialog (an `alert` from markup the frontend should not have parsed). */
export function failOnDialog(page: AnyPage): void {
  page.on('dialog', dialog => {
    throw new Error(`unexpected dialog: ${dialog.message()}`);
  });
}

/**
 * Galata's page on Playwright's clock: installed before JupyterLab loads (use with
 * `test.use({ autoGoto: false })`), so that a test moves the page's time on with
 * `page.clock.fastForward` (timers, `Date`) instead of waiting for it: a wait of 15 s costs none
 * and does not depend on how fast the machine is. Then JupyterLab opens in `tmpPath`, as
 * Galata's own `autoGoto` does.
 */
export async function gotoOnClock(
  page: IJupyterLabPageFixture,
  tmpPath: string
): Promise<void> {
  await page.clock.install();
  await page.goto(`tree/${tmpPath}?reset`);
}
