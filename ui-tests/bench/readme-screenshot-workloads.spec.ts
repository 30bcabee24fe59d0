/**
 * The README's screenshot of workloads (docs/img/workloads-logs.png): the Workloads panel on a
 * job run's page and its Logs view with a search, on a real two-node job. `make screenshot`.
 */
import { expect, test } from '@jupyterlab/galata';
import * as path from 'path';

import { execute } from '../tests/helpers';
import { submitWorkload, waitForStatus } from '../tests/workloads-helpers';

test.use({ viewport: { width: 1440, height: 860 } });

const TRAIN = [
  'import os, sys, time',
  "n = os.environ['NODE_RANK']",
  'for step in range(400):',
  '    time.sleep(0.004)',
  "    print(f'epoch {step // 100} step {step} loss {2.5 * 0.99 ** step + 0.1:.4f} lr 3e-4 tokens/s {51200 + 37 * step}', flush=True)",
  '    if step == 120:',
  "        print(f'WARNING: node {n} dataloader is slow (data wait 31%)', file=sys.stderr, flush=True)",
  '    if step == 260:',
  "        print(f'ERROR: node {n} NaN in gradients, batch skipped', flush=True)",
  "print(f'node {n} saved checkpoint ckpt/step400.pt', flush=True)",
  ''
].join('\n');

test('README screenshot: workloads', async ({ page, request, baseURL }) => {
  test.setTimeout(240_000);
  const job = await submitWorkload(request, baseURL!, {
    name: 'llama-ft-lr3e-4',
    script: TRAIN,
    fields: ['compute: {num_nodes: 2, accelerator_type: CPU}', 'max_retries: 2']
  });
  await waitForStatus(request, baseURL!, job.id, /SUCCEEDED/);

  await page.goto(`?air-workload=${job.id}`);
  await page.sidebar.close('left');
  const panel = page.locator('#jupyter-air-workloads');
  await expect(panel.locator('.jp-air-wl-page-status')).toHaveText('Succeeded');
  await execute(page, 'jupyter-air:open-logs', { id: job.id });
  const logs = page.locator(`.jp-air-logs[data-job-id="${job.id}"]`);
  await expect(logs.locator('.jp-air-logs-row').last()).toContainText(
    'checkpoint'
  );
  await logs.locator('.jp-air-logs-search').fill('step 1');
  await logs.locator('.jp-air-logs-search').press('Enter');
  await expect(logs.locator('mark.jp-air-logs-match').first()).toBeVisible();
  await page.waitForTimeout(1000);
  await page.screenshot({
    path: path.resolve(
      __dirname,
      '..',
      '..',
      'docs',
      'img',
      'workloads-logs.png'
    )
  });
});
