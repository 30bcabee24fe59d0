/**
 * GPU Resources under a JupyterHub-style base URL (`/user/alice/`) on a server using the real
 * NVML backend: on a machine without an NVIDIA driver the panel says why and still shows host
 * metrics. Plain Playwright (Galata's fixtures assume no prefix).
 */
import { expect, test } from '@playwright/test';

import { execute, openLab, requestPaths } from './helpers';

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
