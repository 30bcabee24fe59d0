/**
 * The Logs view in a real JupyterLab against real job runs (two CPU "nodes", submitted with
 * `air run`): following a running job (new lines appear; scrolling up pauses, Resume follows
 * again), then search (highlighted), level and node filters, and the server-side download of the
 * filtered lines. Hostile log lines stay text (no dialog ever opens).
 */
import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';

import { HOSTILE, execute, failOnDialog } from './helpers';
import {
  scratchDir,
  stepsScript,
  submitWorkload,
  waitForStatus
} from './workloads-helpers';

test.describe.configure({ timeout: 240_000 });

test('follows a running job; scrolling up pauses, Resume follows again', async ({
  page,
  request,
  baseURL
}) => {
  failOnDialog(page);
  // 80 lines at once, then one every 0.25 s until the test has seen what it looks for (it
  // writes the file `stop`), however slow the machine is
  const stop = path.join(scratchDir(), 'stop');
  const script = [
    'import os, sys, time',
    "n = os.environ['NODE_RANK']",
    'for i in range(80):',
    "    print(f'node {n} warmup {i}', flush=True)",
    'for i in range(2400):',
    `    if os.path.exists(${JSON.stringify(stop)}):`,
    '        break',
    "    print(f'node {n} tick {i}', flush=True)",
    '    time.sleep(0.25)',
    "print(f'node {n} done', flush=True)",
    ''
  ].join('\n');
  const job = await submitWorkload(request, baseURL!, {
    name: `follow-${Date.now()}`,
    script
  });
  await waitForStatus(request, baseURL!, job.id, /RUNNING/);

  await execute(page, 'jupyter-air:open-logs', { id: job.id });
  const logs = page.locator(`.jp-air-logs[data-job-id="${job.id}"]`);
  await expect(logs).toBeVisible();
  await expect(logs.locator('.jp-air-logs-follow')).toHaveText(
    'Following new lines'
  );
  const rows = logs.locator('.jp-air-logs-row');
  await expect(rows.last()).toContainText(/node 0 tick \d+/, {
    timeout: 30_000
  });
  // new lines keep arriving at the bottom
  const tick = async () =>
    Number((await rows.last().textContent())?.match(/tick (\d+)/)?.[1] ?? -1);
  const first = await tick();
  await expect.poll(tick, { timeout: 10_000 }).toBeGreaterThan(first + 2);
  // virtual: only the rows on screen are in the DOM
  expect(await rows.count()).toBeLessThan(100);

  // scroll up: paused, and says so
  const viewport = logs.locator('.jp-air-logs-viewport');
  await viewport.hover();
  await page.mouse.wheel(0, -600);
  await expect(logs.locator('.jp-air-logs-follow')).toHaveText(
    'Following paused — scroll to the bottom or click Resume'
  );
  await expect(logs).toHaveAttribute('data-paused', 'true');
  const pausedAt = await viewport.evaluate(el => el.scrollTop);
  await page.waitForTimeout(1500);
  expect(await viewport.evaluate(el => el.scrollTop)).toBe(pausedAt);

  // Resume: following again, at the bottom, the lines written meanwhile arrive
  const before = await tick();
  await logs.locator('.jp-air-logs-resume').click();
  await expect(logs.locator('.jp-air-logs-follow')).toHaveText(
    'Following new lines'
  );
  await expect.poll(tick, { timeout: 10_000 }).toBeGreaterThan(before);

  // scrolling up then back to the bottom resumes too
  await viewport.hover();
  await page.mouse.wheel(0, -600);
  await expect(logs).toHaveAttribute('data-paused', 'true');
  await viewport.evaluate(el => (el.scrollTop = el.scrollHeight));
  await expect(logs).toHaveAttribute('data-paused', 'false');

  // the job ends: following stops, the status says so
  fs.writeFileSync(stop, '');
  await waitForStatus(request, baseURL!, job.id, /SUCCEEDED/, 60_000);
  await expect(logs.locator('.jp-air-logs-summary')).toContainText(
    'job succeeded',
    {
      timeout: 10_000
    }
  );
  await expect(logs.locator('.jp-air-logs-follow')).toBeHidden();
  await expect(rows.filter({ hasText: 'node 0 done' })).toHaveCount(1);
});

test('search, level and node filters, and the download of what matches', async ({
  page,
  request,
  baseURL
}) => {
  failOnDialog(page);
  const job = await submitWorkload(request, baseURL!, {
    name: `filters-${Date.now()}`,
    script: stepsScript(10, 0.05)
  });
  await waitForStatus(request, baseURL!, job.id, /SUCCEEDED/);

  await execute(page, 'jupyter-air:open-logs', { id: job.id });
  const logs = page.locator(`.jp-air-logs[data-job-id="${job.id}"]`);
  const rows = logs.locator('.jp-air-logs-row');
  const texts = logs.locator('.jp-air-logs-row .jp-air-logs-text');
  await expect(rows.last()).toContainText('node 0 done green');
  // colours are spans in the terminal palette (ANSI green is #00a250), markup is text
  const green = rows.last().locator('.jp-air-ansi-fg');
  await expect(green).toHaveText('green');
  await expect(green).toHaveCSS('color', 'rgb(0, 162, 80)');
  await expect(logs.getByText(`node 0 says ${HOSTILE}`)).toBeVisible();
  expect(await logs.locator('img').count()).toBe(0);
  await expect(
    logs.locator('.jp-air-logs-row[data-level="error"]')
  ).toContainText('ERROR: node 0 lost a batch');
  await expect(
    logs.locator('.jp-air-logs-row[data-stream="stderr"]')
  ).toContainText('WARNING: node 0 is slow');

  // search: only matching lines, the matches highlighted
  const search = logs.locator('.jp-air-logs-search');
  await search.fill('STEP 4');
  await search.press('Enter');
  await expect(texts).toHaveText(['node 0 step 4 loss 0.200']);
  await expect(logs.locator('mark.jp-air-logs-match')).toHaveText(['step 4']);
  await search.fill('');
  await search.press('Enter');
  await expect(rows.last()).toContainText('node 0 done green');

  // levels: warnings and errors only
  await logs.locator('.jp-air-logs-level-toggle[data-level="info"]').click();
  await expect(texts).toHaveText([
    'WARNING: node 0 is slow',
    'ERROR: node 0 lost a batch'
  ]);

  // node 1
  await logs.locator('.jp-air-logs-node').selectOption('1');
  await expect(texts).toHaveText([
    'WARNING: node 1 is slow',
    'ERROR: node 1 lost a batch'
  ]);

  // download: every matching line of node 1, from the server
  const download = page.waitForEvent('download');
  await logs.locator('.jp-air-logs-download').click();
  const file = await download;
  expect(file.suggestedFilename()).toBe(`${job.id}-attempt1-node1.log`);
  const content = fs.readFileSync((await file.path())!, 'utf8');
  const lines = content.trimEnd().split('\n');
  expect(lines).toHaveLength(2);
  expect(lines[0]).toMatch(
    /^WARN {2}\d{4}-\d\d-\d\dT[\d:.]+Z err WARNING: node 1 is slow$/
  );
  expect(lines[1]).toMatch(/^ERROR \S+ out ERROR: node 1 lost a batch$/);

  // the attempt selector is there once there are retries only
  await expect(logs.locator('.jp-air-logs-attempt-select')).toBeHidden();
});

test('a retried job: the attempt selector, and the time range filter', async ({
  page,
  request,
  baseURL
}) => {
  failOnDialog(page);
  const script = [
    'import os, sys',
    "attempt = os.environ['JUPYTER_AIR_ATTEMPT']",
    "print(f'attempt {attempt} starts', flush=True)",
    "if attempt == '1':",
    "    print('ERROR: attempt 1 crashed', flush=True)",
    '    sys.exit(3)',
    "print(f'attempt {attempt} done', flush=True)",
    ''
  ].join('\n');
  const job = await submitWorkload(request, baseURL!, {
    name: `retry-${Date.now()}`,
    script,
    fields: ['compute: {accelerator_type: CPU}', 'max_retries: 1']
  });
  await waitForStatus(request, baseURL!, job.id, /SUCCEEDED/);

  await execute(page, 'jupyter-air:open-logs', { id: job.id });
  const logs = page.locator(`.jp-air-logs[data-job-id="${job.id}"]`);
  const texts = logs.locator('.jp-air-logs-row .jp-air-logs-text');
  // the latest attempt first
  await expect(texts).toHaveText(['attempt 2 starts', 'attempt 2 done']);
  const attempt = logs.locator('.jp-air-logs-attempt-select');
  await expect(attempt).toBeVisible();
  await attempt.selectOption('1');
  await expect(texts).toHaveText([
    'attempt 1 starts',
    'ERROR: attempt 1 crashed'
  ]);

  // a time range before the job ran: nothing matches, and the view says so
  await logs.locator('.jp-air-logs-until-input').fill('2001-01-01T00:00:00');
  await expect(logs.locator('.jp-air-logs-message')).toContainText(
    'No lines match these filters'
  );
  await expect(texts).toHaveCount(0);
  // cleared: the lines are back
  await logs.locator('.jp-air-logs-until-input').fill('');
  await expect(texts).toHaveText([
    'attempt 1 starts',
    'ERROR: attempt 1 crashed'
  ]);
});
