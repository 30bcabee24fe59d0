/**
 * The Logs view on a 1 M-line log, in Chromium: a real job run (one CPU node, `air run`) writes a
 * million lines; then the time until the first screen of lines shows, the time for a text search
 * and for a level filter to show their first screen, and the longest main-thread task meanwhile
 * (a frozen page would show as one long task). Prints figures.
 */
import { expect, test } from '@jupyterlab/galata';

import { submitWorkload, waitForStatus } from '../tests/workloads-helpers';

const LINES = Number(process.env.AIR_BENCH_LOG_LINES || 1_000_000);

test('Logs view: first screen, search and level filter on a 1 M-line log', async ({
  page,
  request,
  baseURL
}) => {
  test.setTimeout(600_000);
  // 1 line in 97 a warning, 1 in 1009 an error, the rest info
  const script = [
    'import sys',
    'out = sys.stdout',
    `for i in range(${LINES}):`,
    '    if i % 1009 == 0:',
    "        out.write(f'ERROR: step {i} lost a batch\\n')",
    '    elif i % 97 == 0:',
    "        out.write(f'WARNING: step {i} is slow\\n')",
    '    else:',
    "        out.write(f'step {i} loss {1 / (i + 1):.6f} lr 0.0003 tokens/s 51234\\n')",
    'out.flush()',
    ''
  ].join('\n');
  const started = Date.now();
  const job = await submitWorkload(request, baseURL!, {
    name: `logs-1m-${Date.now()}`,
    script,
    fields: ['compute: {accelerator_type: CPU}']
  });
  await waitForStatus(request, baseURL!, job.id, /SUCCEEDED/, 300_000);
  const written = (Date.now() - started) / 1000;

  // watch for long main-thread tasks from here on
  await page.evaluate(() => {
    const w = window as any;
    w.__airLongTasks = [];
    new PerformanceObserver(list => {
      for (const entry of list.getEntries()) {
        w.__airLongTasks.push(entry.duration);
      }
    }).observe({ type: 'longtask', buffered: false });
  });

  // open: from the command to the first screen of rows
  const open = await page.evaluate(async id => {
    const t0 = performance.now();
    void (window as any).jupyterapp.commands.execute('jupyter-air:open-logs', {
      id
    });
    for (;;) {
      const view = document.querySelector(`.jp-air-logs[data-job-id="${id}"]`);
      const rows = view?.querySelectorAll('.jp-air-logs-row') ?? [];
      if (rows.length > 10) {
        return performance.now() - t0;
      }
      await new Promise(r => requestAnimationFrame(r));
    }
  }, job.id);
  const logs = page.locator(`.jp-air-logs[data-job-id="${job.id}"]`);
  await expect(logs.locator('.jp-air-logs-row').last()).toContainText(
    `step ${LINES - 1} `
  );

  // a change of filters, timed from the action to the first screen of matching rows
  const timed = (action: string, term: string) =>
    page.evaluate(
      async ({ id, action, term }) => {
        const view = document.querySelector(
          `.jp-air-logs[data-job-id="${id}"]`
        )!;
        const t0 = performance.now();
        if (action === 'search') {
          const input = view.querySelector(
            '.jp-air-logs-search'
          ) as HTMLInputElement;
          input.value = term;
          input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
        } else {
          (
            view.querySelector(
              `.jp-air-logs-level-toggle[data-level="${action}"]`
            ) as HTMLButtonElement
          ).click();
        }
        for (;;) {
          const texts = [
            ...view.querySelectorAll('.jp-air-logs-row .jp-air-logs-text')
          ].map(el => el.textContent ?? '');
          if (texts.length > 0 && texts.every(t => t.includes(term))) {
            return performance.now() - t0;
          }
          await new Promise(r => requestAnimationFrame(r));
        }
      },
      { id: job.id, action, term }
    );

  const search = await timed('search', 'lost a batch');
  const rowsShown = await logs.locator('.jp-air-logs-row').count();
  // clear the search, then show warnings and errors only
  await timed('search', '');
  const level = await timed('info', ':');
  const errorsOnly = await timed('warning', 'ERROR');
  const longTasks: number[] = await page.evaluate(
    () => (window as any).__airLongTasks
  );
  const longest = longTasks.length ? Math.max(...longTasks) : 0;

  const fmt = (ms: number) => `${ms.toFixed(0)} ms`;
  const line =
    `Logs view, ${LINES.toLocaleString()} lines (written by the job in ${written.toFixed(1)} s): ` +
    `first screen ${fmt(open)}; search "lost a batch" ${fmt(search)} (${rowsShown} rows in the DOM); ` +
    `warnings+errors ${fmt(level)}; errors only ${fmt(errorsOnly)}; ` +
    `longest main-thread task ${fmt(longest)} (${longTasks.length} tasks over 50 ms)`;
  console.log(line);
  test.info().annotations.push({ type: 'figures', description: line });
  expect(open).toBeGreaterThan(0);
});
