/**
 * The README's screenshot of MLflow in JupyterLab (docs/img/mlflow-runs.png): runs started in a
 * notebook with their links in the cell output, and the Experiments panel. `make screenshot`.
 */
import { expect, test } from '@jupyterlab/galata';
import * as path from 'path';

import { execute, openNewNotebook } from '../tests/helpers';

test.use({ viewport: { width: 1440, height: 860 } });

const TRAIN = [
  'import math, mlflow',
  '',
  'for lr in (3e-4, 1e-3):',
  '    with mlflow.start_run(run_name=f"baseline-lr{lr:g}"):',
  '        mlflow.log_params({"lr": lr, "batch_size": 64})',
  '        for step in range(40):',
  '            loss = 2.5 * math.exp(-step * lr * 60) + 0.1',
  '            mlflow.log_metric("loss", loss, step=step)'
].join('\n');

test('README screenshot: MLflow', async ({ page, request, baseURL, tmpPath }) => {
  test.setTimeout(240_000);
  await expect
    .poll(
      async () => (await (await request.get(`${baseURL}/air/api/mlflow`)).json()).state,
      { timeout: 150_000, intervals: [2000] }
    )
    .toBe('ready');
  await openNewNotebook(page, `${tmpPath}/train-llm.ipynb`, [TRAIN]);
  await page.notebook.runCell(0, true);
  await expect(page.locator('.jp-air-run')).toHaveCount(2, { timeout: 60_000 });
  await expect(page.locator('.jp-air-run-status').last()).toHaveText(/finished/i, {
    timeout: 60_000
  });
  await execute(page, 'jupyter-air:open-experiments');
  await expect(page.locator('#jupyter-air-experiments .jp-air-exp-run')).toHaveCount(2, {
    timeout: 30_000
  });
  await page.waitForTimeout(1000);
  await page.screenshot({
    path: path.resolve(__dirname, '..', '..', 'docs', 'img', 'mlflow-runs.png')
  });
});
