/**
 * MLflow end to end, on the real server: the embedded tracking server starts with JupyterLab, the
 * MLflow tab shows its UI (also under a JupyterHub-style base URL), and a run started in a
 * notebook shows in the cell output and in the Experiments panel.
 */
import { expect, test } from '@jupyterlab/galata';
import {
  APIRequestContext,
  expect as pwExpect,
  test as pwTest
} from '@playwright/test';

import { execFile } from 'child_process';
import { promisify } from 'util';

import {
  HOSTILE,
  execute,
  failOnDialog,
  openLab,
  openNewNotebook,
  requestPaths,
  runFromPalette
} from './helpers';
import { mlflowReady, serverDataDir } from './workloads-helpers';

/** Starting takes 15–55 s (docs/mlflow.md); leave room on a busy machine. */
const READY_TIMEOUT = 150_000;

/** The MLflow status, `null` when the server has no MLflow API. */
async function mlflowStatus(
  request: APIRequestContext,
  base: string
): Promise<{ state: string; ui: string | null } | null> {
  const response = await request.get(`${base}air/api/mlflow`);
  if (response.status() === 404) {
    return null;
  }
  expect(response.ok()).toBe(true);
  return response.json();
}

async function waitUntilReady(request: APIRequestContext, base: string) {
  await expect
    .poll(async () => (await mlflowStatus(request, base))?.state, {
      timeout: READY_TIMEOUT,
      intervals: [2000]
    })
    .toBe('ready');
}

async function expectMlflowApi(request: APIRequestContext, base: string) {
  const status = await mlflowStatus(request, base);
  expect(status, 'air/api/mlflow answers').not.toBeNull();
}

test.describe('MLflow on the real server', () => {
  test.beforeEach(async ({ page, request, baseURL }) => {
    await expectMlflowApi(request, `${baseURL}/`);
    failOnDialog(page);
  });

  test('"Open MLflow" shows the embedded MLflow UI in a tab', async ({
    page
  }) => {
    test.setTimeout(READY_TIMEOUT + 60_000);
    await runFromPalette(page, 'Open MLflow', 'Open MLflow');
    const tab = page.locator('#jupyter-air-mlflow');
    await expect(tab).toBeVisible();
    const iframe = tab.locator('iframe');
    // "MLflow is starting (N s)…" until ready, then the UI
    await expect(iframe).toHaveAttribute('src', '/air/mlflow/', {
      timeout: READY_TIMEOUT
    });
    await expect(
      page.frameLocator('#jupyter-air-mlflow iframe').locator('body')
    ).toContainText(/Experiments/i, { timeout: 60_000 });
  });

  test('a run started in a notebook shows in the cell output and the Experiments panel', async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    test.setTimeout(READY_TIMEOUT + 150_000);
    await waitUntilReady(request, `${baseURL}/`);
    const path = `${tmpPath}/tracked.ipynb`;
    await openNewNotebook(page, path, [
      [
        // no %load_ext: JupyterLab loads jupyter-air's IPython extension into the kernel
        'import mlflow',
        `with mlflow.start_run(run_name=${JSON.stringify(HOSTILE)}):`,
        '    mlflow.log_metric("loss", 0.25)'
      ].join('\n')
    ]);
    await page.notebook.runCell(0, true);

    const display = page.locator('.jp-air-run');
    await expect(display).toHaveCount(1, { timeout: 60_000 });
    await expect(display.locator('.jp-air-run-name')).toHaveText(HOSTILE);
    await expect(display.locator('.jp-air-run-status')).toHaveText(
      /finished/i,
      {
        timeout: 30_000
      }
    );
    await expect(page.locator('.jp-air-run img')).toHaveCount(0);

    // the Experiments panel, from the display's button
    await display.locator('.jp-air-run-open-panel').click();
    const panel = page.locator('#jupyter-air-experiments');
    await expect(panel).toBeVisible();
    await expect(panel.locator('.jp-air-exp-name')).toContainText('tracked');
    const row = panel.locator('.jp-air-exp-run.jp-mod-highlighted');
    await expect(row.locator('.jp-air-exp-run-name')).toHaveText(HOSTILE, {
      timeout: 30_000
    });
    await expect(row.locator('.jp-air-exp-metric')).toContainText('loss0.25');

    // the run in the MLflow UI, from the link in the cell output
    await display.locator('.jp-air-run-link-run').click();
    const iframe = page.locator('#jupyter-air-mlflow iframe');
    await expect(iframe).toHaveAttribute(
      'src',
      /^\/air\/mlflow\/#\/experiments\/\d+\/runs\/[0-9a-f]{32}\?workflowType=machine_learning$/
    );
    await expect(
      page
        .frameLocator('#jupyter-air-mlflow iframe')
        .getByText(HOSTILE, { exact: true })
        .first()
    ).toBeVisible({ timeout: 60_000 });
  });

  test('a card left at RUNNING shows how the run ended (asked of the server)', async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    test.setTimeout(READY_TIMEOUT + 120_000);
    await waitUntilReady(request, `${baseURL}/`);
    await openNewNotebook(page, `${tmpPath}/left-running.ipynb`, [
      'import mlflow\nrun = mlflow.start_run(run_name="left-running")'
    ]);
    await page.notebook.runCell(0, true);
    const display = page.locator('.jp-air-run');
    await expect(display.locator('.jp-air-run-status')).toHaveText(/running/i, {
      timeout: 60_000
    });
    const href = await display
      .locator('.jp-air-run-link-run')
      .getAttribute('href');
    const runId = href!.match(/runs\/([0-9a-f]{32})/)![1];
    // ended by another process while no cell runs: the kernel has nothing to tell the card.
    // It finds the embedded server's address and token in the server's data folder (only its
    // user can read them), as any process of that user may.
    await mlflowReady(request, baseURL!);
    await promisify(execFile)(process.env.AIR_PYTHON || 'python', [
      '-c',
      'import os, sys; from pathlib import Path; from mlflow import MlflowClient; ' +
        'from jupyter_air.mlflow_server.records import ServerFiles; ' +
        'folder = Path(sys.argv[1]) / "mlflow"; ' +
        'os.environ.update(ServerFiles(folder).endpoint().env()); ' +
        'MlflowClient().set_terminated(sys.argv[2], "KILLED")',
      serverDataDir(baseURL!),
      runId
    ]);
    await expect(display.locator('.jp-air-run-status')).toHaveText(/killed/i, {
      timeout: 30_000
    });
    await expect(display).toHaveAttribute('data-status', 'KILLED');
  });

  test('a renamed notebook records its runs under its new name', async ({
    page,
    request,
    baseURL,
    tmpPath
  }) => {
    test.setTimeout(READY_TIMEOUT + 120_000);
    await waitUntilReady(request, `${baseURL}/`);
    await openNewNotebook(page, `${tmpPath}/before.ipynb`, [
      'import mlflow\nwith mlflow.start_run(run_name="after-rename"):\n    pass'
    ]);
    // the kernel runs (and learned its notebook's path) before the rename
    await page.notebook.runCell(0, true);
    await expect(page.locator('.jp-air-run-experiment-name')).toHaveText(
      /\/before$/,
      { timeout: 60_000 }
    );
    await page.evaluate(
      async ({ from, to }) => {
        await (window as any).jupyterapp.serviceManager.contents.rename(
          from,
          to
        );
      },
      { from: `${tmpPath}/before.ipynb`, to: `${tmpPath}/after.ipynb` }
    );
    await expect(
      page.locator('.jp-mod-current .lm-TabBar-tabLabel')
    ).toHaveText('after.ipynb');
    // same kernel, new name: its next run goes to the renamed notebook's experiment
    await page.notebook.runCell(0, true);
    await expect(page.locator('.jp-air-run-experiment-name')).toHaveText(
      new RegExp(`/${tmpPath}/after$`),
      { timeout: 60_000 }
    );
  });
});

// JupyterHub-style prefix (plain Playwright: Galata's fixtures assume no prefix)
const prefixPort = process.env.AIR_UI_PREFIX_PORT || '8912';
const prefixBase = `http://localhost:${prefixPort}/user/alice/`;

pwTest('the MLflow tab works under /user/alice/', async ({ page, request }) => {
  pwTest.setTimeout(READY_TIMEOUT + 60_000);
  const status = await mlflowStatus(request, prefixBase);
  pwExpect(status, 'air/api/mlflow answers').not.toBeNull();
  pwExpect(status!.ui).toBe('/user/alice/air/mlflow/');
  const paths = requestPaths(page, 'air/api/mlflow');
  await openLab(page, `${prefixBase}lab`);
  await execute(page, 'jupyter-air:open-mlflow', {
    path: '#/experiments/0/runs'
  });
  const iframe = page.locator('#jupyter-air-mlflow iframe');
  await pwExpect(iframe).toHaveAttribute(
    'src',
    '/user/alice/air/mlflow/#/experiments/0/runs',
    { timeout: READY_TIMEOUT }
  );
  await pwExpect(
    page.frameLocator('#jupyter-air-mlflow iframe').locator('body')
  ).toContainText(/Default|Experiments/i, { timeout: 60_000 });
  pwExpect(paths.length).toBeGreaterThan(0);
  for (const p of paths) {
    pwExpect(p).toMatch(/^\/user\/alice\/air\/api\/mlflow/);
  }
});

pwTest(
  'a write in the MLflow UI passes Jupyter’s XSRF check (server under /user/alice/)',
  async ({ page }) => {
    pwTest.setTimeout(READY_TIMEOUT + 90_000);
    const base = prefixBase.replace(/\/$/, '');
    await mlflowReady(page.request, base);
    const python = process.env.AIR_PYTHON || 'python';
    // the embedded server's address and token, from the server's data folder (its user's)
    const { stdout } = await promisify(execFile)(python, [
      '-c',
      'import os, sys; from pathlib import Path; from mlflow import MlflowClient; ' +
        'from jupyter_air.mlflow_server.records import ServerFiles; ' +
        'os.environ.update(ServerFiles(Path(sys.argv[1]) / "mlflow").endpoint().env()); ' +
        'c = MlflowClient(); ' +
        'e = c.create_experiment(sys.argv[2]); r = c.create_run(e, run_name="tag-me"); ' +
        'print(e, r.info.run_id)',
      serverDataDir(prefixBase),
      `xsrf-${Date.now()}`
    ]);
    const [experimentId, runId] = stdout.trim().split(/\s+/).slice(-2);
    await openLab(page, `${prefixBase}lab`);

    // this server checks XSRF: the browser's cookies alone do not make a write
    const cookieOnly = await page.request.post(
      `${prefixBase}air/mlflow/ajax-api/2.0/mlflow/runs/set-tag`,
      { data: { run_id: runId, key: 'forged', value: 'yes' } }
    );
    pwExpect(cookieOnly.status()).toBe(403);

    // the MLflow UI in its tab: add a tag to the run
    await execute(page, 'jupyter-air:open-mlflow', {
      path: `#/experiments/${experimentId}/runs/${runId}`
    });
    const mlflow = page.frameLocator('#jupyter-air-mlflow iframe');
    await mlflow
      .getByRole('button', { name: 'Add tags' })
      .click({ timeout: 60_000 });
    const dialog = mlflow.getByRole('dialog');
    await dialog.getByRole('combobox').fill('stage');
    await dialog.getByRole('combobox').press('Enter');
    await dialog.getByPlaceholder('Type a value').fill('verified');
    await dialog.getByRole('button', { name: 'Add tag', exact: true }).click();
    const saved = page.waitForResponse(r => r.url().endsWith('/runs/set-tag'));
    await dialog.getByRole('button', { name: 'Save tags' }).click();
    const response = await saved;
    pwExpect(response.status()).toBe(200);
    pwExpect(response.request().headers()['x-xsrftoken']).toBeTruthy();
    await pwExpect(mlflow.getByText('verified')).toBeVisible();

    const tags = await promisify(execFile)(python, [
      '-c',
      'import json, sys; from mlflow import MlflowClient; ' +
        'print(json.dumps(MlflowClient(sys.argv[1]).get_run(sys.argv[2]).data.tags))',
      tracking,
      runId
    ]);
    const stored = JSON.parse(tags.stdout.trim().split('\n').pop()!);
    pwExpect(stored.stage).toBe('verified');
    pwExpect(stored.forged).toBeUndefined();
  }
);
