/**
 * Run displays (`application/vnd.jupyter-air.run+json`) in a real notebook: a kernel displays a
 * fixed bundle and updates it in place, as jupyter_air.tracking does for a run. Independent of the
 * MLflow server, except where the MLflow tab loads the UI (checked when it is ready).
 */
import { expect, test } from '@jupyterlab/galata';

import { HOSTILE, failOnDialog, openNewNotebook } from './helpers';

const RUN_ID = 'abc123def4567890abc123def4567890';

const SETUP = `
import time
from IPython.display import display
START = int(time.time() * 1000) - 65_000
def bundle(status, end=None):
    links = {
        "run": "#/experiments/7/runs/${RUN_ID}",
        "system_metrics": "#/experiments/7/runs/${RUN_ID}/system-metrics",
        "experiment": "#/experiments/7/runs",
    }
    payload = {
        "run_id": "${RUN_ID}", "run_name": ${JSON.stringify(HOSTILE)}, "status": status,
        "experiment_id": "7", "experiment_name": "/Users/test/<b>bold</b>.ipynb",
        "parent_run_id": "fedcba9876543210fedcba9876543210", "resumed": True,
        "start_time": START, "end_time": end, "links": links, "ui": "/air/mlflow/",
    }
    return {
        "application/vnd.jupyter-air.run+json": payload,
        "text/html": '<b class="air-fallback">fallback</b>',
        "text/plain": "run",
    }
handle = display(bundle("RUNNING"), raw=True, display_id=True)
`;

test.describe('Run display', () => {
  test('renders the run, ticks while running, updates in place; its buttons open MLflow and the panel', async ({
    page,
    tmpPath,
    request,
    baseURL
  }) => {
    failOnDialog(page);
    await openNewNotebook(page, `${tmpPath}/run-display.ipynb`, [
      SETUP,
      'handle.update(bundle("FINISHED", START + 90_000), raw=True)'
    ]);
    await page.notebook.runCell(0, true);

    const display = page.locator('.jp-air-run');
    await expect(display).toHaveCount(1);
    await expect(display.locator('.jp-air-run-name')).toHaveText(HOSTILE);
    await expect(display.locator('img')).toHaveCount(0);
    await expect(page.locator('.air-fallback')).toHaveCount(0);
    await expect(display.locator('.jp-air-run-status')).toHaveText(/running/i);
    await expect(display.locator('.jp-air-run-experiment-name')).toHaveText(
      '/Users/test/<b>bold</b>.ipynb'
    );
    await expect(display.locator('.jp-air-run-nested')).toHaveText(
      'nested in fedcba98'
    );
    await expect(display.locator('.jp-air-run-resumed')).toBeVisible();
    const duration = display.locator('.jp-air-run-duration');
    await expect(duration).toHaveText(/^1 min \d+ s$/);
    const first = await duration.innerText();
    await expect
      .poll(() => duration.innerText(), { timeout: 5000 })
      .not.toBe(first);

    await expect(display.locator('.jp-air-run-link-run')).toHaveAttribute(
      'href',
      `/air/mlflow/#/experiments/7/runs/${RUN_ID}`
    );
    await expect(display.locator('.jp-air-run-link-metrics')).toHaveAttribute(
      'href',
      `/air/mlflow/#/experiments/7/runs/${RUN_ID}/system-metrics`
    );
    await expect(
      display.locator('.jp-air-run-link-experiment')
    ).toHaveAttribute('href', '/air/mlflow/#/experiments/7/runs');

    // the kernel updates the display in place
    await page.notebook.runCell(1, true);
    await expect(display).toHaveCount(1);
    await expect(display.locator('.jp-air-run-status')).toHaveText(/finished/i);
    await expect(duration).toHaveText('1 min 30 s');

    // Experiment panel button
    await display.locator('.jp-air-run-open-panel').click();
    await expect(page.locator('#jupyter-air-experiments')).toBeVisible();

    // MLflow run button: the MLflow tab, on the run once MLflow is ready
    await display.locator('.jp-air-run-link-run').click();
    const tab = page.locator('#jupyter-air-mlflow');
    await expect(tab).toBeVisible();
    const status = await request.get(`${baseURL}/air/api/mlflow`);
    if (status.ok() && (await status.json()).state === 'ready') {
      await expect(tab.locator('iframe')).toHaveAttribute(
        'src',
        `/air/mlflow/#/experiments/7/runs/${RUN_ID}`
      );
    } else {
      await expect(tab.locator('.jp-air-mlflow-message')).toBeVisible();
    }
  });
});
