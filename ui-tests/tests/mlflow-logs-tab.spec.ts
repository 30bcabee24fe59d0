/**
 * The Logs tab on the MLflow UI's run page, through the proxy under a JupyterHub-style base URL
 * (`/user/alice/`, Jupyter's XSRF check on): the run of a real, running two-node workload has a
 * Logs tab beside MLflow's tabs, with their look, that shows its lines, follows them (scrolling
 * up pauses, Resume follows again), searches, filters by node and level and downloads what
 * matches; a run of no job run has no tab. Plain Playwright (Galata's fixtures assume no
 * prefix).
 *
 * With AIR_UI_DOCS_SCREENSHOT=1 it also writes docs/img/mlflow-logs-tab.png.
 */
import { APIRequestContext, Page, expect, test } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';

import { failOnDialog, requestPaths } from './helpers';
import { air, submitWorkload, waitForStatus } from './workloads-helpers';

const port = process.env.AIR_UI_PREFIX_PORT || '8912';
const base = `http://localhost:${port}/user/alice`;
/** The MLflow UI loads its scripts through the proxy: the first page can take a while. */
const UI_TIMEOUT = 90_000;

/** Each node: 150 steps at once (a warning at 3, an error at 5), then a line every 0.5 s. */
const SCRIPT = [
  'import os, sys, time',
  "n = os.environ['NODE_RANK']",
  'for i in range(150):',
  "    print(f'node {n} step {i} loss {1 / (i + 1):.3f}', flush=True)",
  '    if i == 3:',
  "        print(f'WARNING: node {n} is slow', file=sys.stderr, flush=True)",
  '    if i == 5:',
  "        print(f'ERROR: node {n} lost a batch <b>bold</b>', flush=True)",
  'for k in range(240):',
  "    print(f'node {n} tick {k}', flush=True)",
  '    time.sleep(0.5)',
  ''
].join('\n');

/** The experiment and MLflow run of the job run's first attempt. */
async function attemptRun(
  request: APIRequestContext,
  id: string
): Promise<{ experiment: string; run: string }> {
  let found: { experiment: string; run: string } | null = null;
  await expect
    .poll(
      async () => {
        const job = await (
          await request.get(`${base}/air/api/workloads/${id}`)
        ).json();
        const run = job.attempts?.[0]?.mlflow_run_id;
        if (run && job.experiment_id) {
          found = { experiment: job.experiment_id, run };
        }
        return found !== null;
      },
      { timeout: 60_000, intervals: [500] }
    )
    .toBe(true);
  return found!;
}

async function openRunPage(page: Page, experiment: string, run: string) {
  await page.goto(`${base}/air/mlflow/#/experiments/${experiment}/runs/${run}`);
  await expect(page.getByRole('tab', { name: 'Overview' })).toBeVisible({
    timeout: UI_TIMEOUT
  });
}

test.use({ viewport: { width: 1280, height: 800 } });

test("a job-backed run's page has a Logs tab: lines, follow, search, node and level, download", async ({
  page,
  request
}) => {
  test.setTimeout(300_000);
  failOnDialog(page);
  const job = await submitWorkload(request, base, {
    name: `logs-tab-${Date.now()}`,
    script: SCRIPT
  });
  try {
    await waitForStatus(request, base, job.id, /RUNNING/);
    const { experiment, run } = await attemptRun(request, job.id);
    const calls = requestPaths(page, '/logs');
    await openRunPage(page, experiment, run);

    // beside MLflow's tabs, with their look
    const tab = page.locator('[data-jupyter-air="logs-tab"]');
    await expect(tab).toBeVisible({ timeout: 30_000 });
    await expect(tab).toHaveText('Logs');
    const overview = page.getByRole('tab', { name: 'Overview' });
    expect(await tab.getAttribute('class')).toBe(
      await overview.getAttribute('class')
    );
    await expect(tab).toHaveAttribute('data-state', 'inactive');

    await tab.click();
    await expect(tab).toHaveAttribute('data-state', 'active');
    await expect(overview).toHaveAttribute('data-state', 'inactive');
    const panel = page.locator('[data-jupyter-air="logs-panel"]');
    await expect(panel).toBeVisible();
    const rows = panel.locator('.jp-air-mlf-logs-row');
    const step0 = panel.locator('.jp-air-mlf-logs-row', {
      hasText: 'node 0 step 0 '
    });
    await expect(step0).toHaveCount(1);
    await expect(step0.locator('.jp-air-mlf-logs-node')).toHaveText('node 0');
    await expect(step0.locator('.jp-air-mlf-logs-level-badge')).toHaveText(
      'INFO'
    );
    const error = panel.locator('.jp-air-mlf-logs-row[data-level="error"]');
    await expect(error).toContainText('ERROR: node 0 lost a batch <b>bold</b>');
    await expect(panel.locator('b')).toHaveCount(0); // text, never HTML

    // following: new lines arrive; scrolling up pauses, Resume follows again
    await expect(panel).toHaveAttribute('data-following', 'true');
    await expect(
      panel.locator('.jp-air-mlf-logs-row', { hasText: /node 0 tick \d+/ })
    ).not.toHaveCount(0, { timeout: 20_000 });
    const screenshot = !!process.env.AIR_UI_DOCS_SCREENSHOT;
    if (screenshot) {
      // MLflow's assistant panel takes a third of the page
      await page
        .locator('[data-component-id="mlflow.assistant.chat_panel.close"]')
        .click({ timeout: 3000 })
        .catch(() => undefined);
    }
    const list = panel.locator('.jp-air-mlf-logs-lines');
    await list.hover();
    await page.mouse.wheel(0, -3000);
    await expect(panel).toHaveAttribute('data-paused', 'true');
    const resume = panel.locator('.jp-air-mlf-logs-resume');
    await expect(resume).toBeVisible();
    if (screenshot) {
      await page.screenshot({
        path: path.join(
          __dirname,
          '..',
          '..',
          'docs',
          'img',
          'mlflow-logs-tab.png'
        )
      });
    }
    await resume.click();
    await expect(panel).toHaveAttribute('data-paused', 'false');
    await expect(panel).toHaveAttribute('data-following', 'true');
    // search
    const search = panel.locator('.jp-air-mlf-logs-search');
    await search.fill('lost a batch');
    await search.press('Enter');
    await expect(rows).toHaveCount(1);
    await expect(rows.first().locator('mark')).toHaveText('lost a batch');
    await search.fill('');
    await search.press('Enter');

    // node 1, warnings and errors only
    await panel.locator('.jp-air-mlf-logs-node-filter').selectOption('1');
    await expect(
      panel.locator('.jp-air-mlf-logs-row', { hasText: 'node 1 step 0 ' })
    ).toHaveCount(1);
    await expect(
      panel.locator('.jp-air-mlf-logs-row', { hasText: 'node 0 ' })
    ).toHaveCount(0);
    await panel.locator('input[value="info"]').uncheck();
    await expect(rows).toHaveCount(2);
    // (stdout and stderr are read apart: their order within a millisecond is not fixed)
    await expect(
      panel.locator('.jp-air-mlf-logs-row[data-level="warning"]')
    ).toContainText('WARNING: node 1 is slow');
    await expect(
      panel.locator('.jp-air-mlf-logs-row[data-level="error"]')
    ).toContainText('ERROR: node 1 lost a batch');

    // the download: every line that matches
    const download = page.waitForEvent('download');
    await panel.locator('.jp-air-mlf-logs-download').click();
    const file = await download;
    const content = fs.readFileSync((await file.path())!, 'utf8');
    const lines = content.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(content).toContain('WARNING: node 1 is slow');
    expect(content).toContain('ERROR: node 1 lost a batch');
    expect(content).not.toContain('node 0');

    // MLflow's own tab gives the page back
    await overview.click();
    await expect(panel).toBeHidden();
    await expect(overview).toHaveAttribute('data-state', 'active');

    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) {
      expect(call).toMatch(
        new RegExp(`^/user/alice/air/api/runs/${run}/logs(/download)?$`)
      );
    }
  } finally {
    await air(base, ['cancel', job.id]).catch(() => undefined);
  }
});

test('the page of a run of no job run has no Logs tab', async ({ page }) => {
  test.setTimeout(180_000);
  failOnDialog(page);
  await page.goto(`${base}/air/mlflow/`);
  // a plain run, created by the MLflow page itself (its requests carry Jupyter's XSRF header)
  const created = await page.evaluate(async () => {
    const post = async (route: string, body: unknown) =>
      (
        await fetch(`ajax-api/2.0/mlflow/${route}`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify(body)
        })
      ).json();
    const experiment = await post('experiments/create', {
      name: `no-job-${Date.now()}`
    });
    const run = await post('runs/create', {
      experiment_id: experiment.experiment_id,
      start_time: Date.now()
    });
    return {
      experiment: experiment.experiment_id as string,
      run: run.run.info.run_id as string
    };
  });
  const probe = page.waitForResponse(response =>
    response.url().includes(`/air/api/runs/${created.run}/logs`)
  );
  await openRunPage(page, created.experiment, created.run);
  expect((await probe).status()).toBe(404);
  await page.waitForTimeout(1000);
  await expect(page.locator('[data-jupyter-air="logs-tab"]')).toHaveCount(0);
  await expect(page.locator('[data-jupyter-air="logs-link"]')).toHaveCount(0);
});
