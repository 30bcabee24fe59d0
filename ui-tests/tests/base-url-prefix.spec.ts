/**
 * Under a JupyterHub-style base URL (`/user/alice/`): GPU Resources on a server using the real
 * NVML backend (on a machine without an NVIDIA driver the panel says why and still shows host
 * metrics), and a job run's page, Logs view and download. Plain Playwright (Galata's fixtures
 * assume no prefix).
 */
import { expect, test } from '@playwright/test';
import * as fs from 'fs';

import { execute, openLab, requestPaths } from './helpers';
import {
  stepsScript,
  submitWorkload,
  waitForStatus
} from './workloads-helpers';

const port = process.env.AIR_UI_PREFIX_PORT || '8912';
const lab = `http://localhost:${port}/user/alice/lab`;

test('GPU Resources works under /user/alice/ and explains a missing GPU', async ({
  page
}) => {
  const paths = requestPaths(page, 'air/api/gpu');
  await openLab(page, lab);
  await execute(page, 'jupyter-air:open-gpu-resources');
  const panel = page.locator('#jupyter-air-gpu');
  await expect(panel).toBeVisible();
  await expect(panel.locator('.jp-air-gpu-host-cpu')).toContainText(/%/);
  await expect(panel.locator('.jp-air-gpu-host-mem')).toContainText(
    /GiB|MiB|GB|MB/
  );
  const cards = panel.locator('.jp-air-gpu-card');
  const noGpu = panel.locator('.jp-air-gpu-nogpu');
  // a GPU machine shows its cards; a machine without a driver the reason
  await expect(cards.or(noGpu).first()).toBeVisible();
  if ((await noGpu.count()) > 0) {
    await expect(noGpu).toContainText(/NVIDIA|driver|NVML/);
    await expect(cards).toHaveCount(0);
  }
  expect(paths.length).toBeGreaterThan(0);
  for (const path of paths) {
    expect(path).toMatch(/^\/user\/alice\/air\/api\/gpu/);
  }
});

test('Workloads, Logs and the download work under /user/alice/', async ({
  page,
  request
}) => {
  test.setTimeout(240_000);
  const base = `http://localhost:${port}/user/alice`;
  const job = await submitWorkload(request, base, {
    name: `prefix-${Date.now()}`,
    script: stepsScript(6, 0.02)
  });
  await waitForStatus(request, base, job.id, /SUCCEEDED/);

  const paths = requestPaths(page, 'air/api/workloads');
  await openLab(page, `${lab}?air-workload=${job.id}`);
  const jobPage = page.locator('#jupyter-air-workloads .jp-air-wl-page');
  await expect(jobPage).toHaveAttribute('data-job-id', job.id);
  await expect(jobPage.locator('.jp-air-wl-page-status')).toHaveText(
    'Succeeded'
  );
  await expect(
    jobPage.locator('.jp-air-wl-attempt-run').first()
  ).toHaveAttribute('href', /^\/user\/alice\/air\/mlflow\/#\/experiments\//);

  await jobPage.locator('.jp-air-wl-logs').click();
  const logs = page.locator(`.jp-air-logs[data-job-id="${job.id}"]`);
  await expect(logs.locator('.jp-air-logs-row').last()).toContainText(
    'node 0 done'
  );
  const download = page.waitForEvent('download');
  await logs.locator('.jp-air-logs-download').click();
  const file = await download;
  const content = fs.readFileSync((await file.path())!, 'utf8');
  expect(content).toContain('ERROR: node 0 lost a batch');
  expect(content.trimEnd().split('\n')).toHaveLength(9); // 6 steps, a warning, an error, done

  expect(paths.length).toBeGreaterThan(1);
  for (const path of paths) {
    expect(path).toMatch(/^\/user\/alice\/air\/api\/workloads\//);
  }
});
