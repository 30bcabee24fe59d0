/**
 * GPU Resources in a real JupyterLab (simulated GPUs, 2 s poll interval, 15 s idle timeout; see
 * jupyter_server_test_config.py).
 */
import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';

import {
  execute,
  gotoOnClock,
  openNewNotebook,
  requestPaths,
  runFromPalette
} from './helpers';

const PANEL = '#jupyter-air-gpu';

async function openPanel(page: IJupyterLabPageFixture): Promise<void> {
  await execute(page, 'jupyter-air:open-gpu-resources');
  await expect(page.locator(PANEL)).toBeVisible();
}

/** The GPU API requests the page sends from now on. */
function gpuRequests(page: IJupyterLabPageFixture): string[] {
  return requestPaths(page, '/air/api/gpu');
}

/**
 * Stop the page's running clock (no timer fires until the test moves it). Playwright pauses at
 * a time, which must not be in the page's past: the clock runs on while we ask it, so the pause
 * is set a little ahead, further ahead each time a loaded machine was slower than that.
 */
async function pauseClock(page: IJupyterLabPageFixture): Promise<void> {
  for (let aheadMs = 250; ; aheadMs *= 2) {
    const now = await page.evaluate(() => Date.now());
    try {
      await page.clock.pauseAt(now + aheadMs);
      return;
    } catch (error) {
      if (aheadMs >= 4_000 || !String(error).includes('to the past')) {
        throw error;
      }
    }
  }
}

test.describe('GPU Resources panel', () => {
  test('is in the right sidebar and shows values and charts', async ({
    page
  }) => {
    const tab = page.locator(
      '.jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id="jupyter-air-gpu"]'
    );
    await expect(tab).toBeVisible();
    await expect(tab).toHaveAttribute('title', /GPU Resources/);
    await tab.click();
    const panel = page.locator(PANEL);
    await expect(panel).toBeVisible();

    await expect(panel.locator('.jp-air-gpu-backend')).toContainText(
      /simulated/i
    );
    const cards = panel.locator('.jp-air-gpu-card');
    await expect(cards).toHaveCount(2);
    await expect(cards.first().locator('.jp-air-gpu-util')).toHaveText(
      /\d+(\.\d)?\s?%/
    );
    await expect(cards.first().locator('.jp-air-gpu-mem')).toContainText(
      /GiB|MiB|GB|MB/
    );
    await expect(cards.first().locator('.jp-air-gpu-temp')).toContainText(/°C/);
    await expect(cards.first().locator('.jp-air-gpu-power')).toContainText(/W/);
    await expect(panel.locator('.jp-air-gpu-host-cpu')).toContainText(/%/);
    await expect(panel.locator('.jp-air-gpu-node')).not.toBeEmpty();

    // three charts (utilisation, memory, temperature) on a canvas, drawn with one line per GPU
    const charts = panel.locator('.jp-air-gpu-chart');
    await expect(charts).toHaveCount(3);
    const plots = charts.locator('.jp-air-gpu-chart-plot');
    for (const metric of ['util', 'mem', 'temp']) {
      const plot = panel.locator(
        `.jp-air-gpu-chart[data-metric="${metric}"] .jp-air-gpu-chart-plot`
      );
      await expect(plot.locator('canvas').first()).toBeVisible();
      await expect(plot).toHaveAttribute('data-lines', '2');
    }
    await expect(plots).toHaveCount(3);

    // values keep coming while the panel is open (2 s interval in this config)
    const before = await cards.first().locator('.jp-air-gpu-util').innerText();
    await expect
      .poll(async () => cards.first().locator('.jp-air-gpu-util').innerText(), {
        timeout: 15000
      })
      .not.toBe(before);
  });

  test('opens from the command palette', async ({ page }) => {
    await runFromPalette(page, 'GPU Resources', 'Open GPU Resources');
    await expect(page.locator(PANEL)).toBeVisible();
    await expect(page.locator(`${PANEL} .jp-air-gpu-card`)).toHaveCount(2);
  });

  test('Refresh fetches a new sample at once', async ({ page }) => {
    await openPanel(page);
    const updated = page.locator(`${PANEL} .jp-air-gpu-updated`);
    await expect(updated).toContainText(/updated/i);
    await page.waitForTimeout(1200);
    const refresh = page.waitForResponse(
      r =>
        r.url().includes('/air/api/gpu/refresh') &&
        r.request().method() === 'POST' &&
        r.status() === 200
    );
    await page.locator(`${PANEL} .jp-air-gpu-refresh`).click();
    const body = await (await refresh).json();
    expect(body.latest.gpus).toHaveLength(2);
    await expect(updated).toContainText(/just now|0 s ago|1 s ago/);
  });

  test('names the notebook whose kernel holds GPU memory', async ({
    page,
    tmpPath
  }) => {
    const name = `gpu-owner-${Date.now()}.ipynb`;
    await openNewNotebook(page, `${tmpPath}/${name}`);
    await page.notebook.setCell(0, 'code', 'x = 1');
    await page.notebook.runCell(0, true);
    await openPanel(page);
    await page.waitForTimeout(1200);
    await page.locator(`${PANEL} .jp-air-gpu-refresh`).click();
    const processes = page.locator(`${PANEL} .jp-air-gpu-processes`);
    await expect(processes).toContainText(name, { timeout: 10000 });
    await expect(processes).toContainText(/ipykernel|python/);
  });
});

// On the page's clock (helpers.ts gotoOnClock): its polls and its idle pause are timers, moved on
// by the test rather than waited for
test.describe('GPU Resources panel, on the page clock', () => {
  test.use({ autoGoto: false });
  test.beforeEach(async ({ page, tmpPath }) => {
    await gotoOnClock(page, tmpPath);
  });

  test('polls only while visible, and reopening resumes at once', async ({
    page
  }) => {
    await openPanel(page);
    const requests = gpuRequests(page);
    // a poll every 2 s here: one more with each 2 s of the page's time
    for (let poll = 1; poll <= 2; poll++) {
      await page.clock.fastForward(2_000);
      await expect.poll(() => requests.length).toBeGreaterThanOrEqual(poll);
    }

    // collapse the right sidebar: the panel is hidden and must stop polling
    const tab = page.locator('.lm-TabBar-tab[data-id="jupyter-air-gpu"]');
    await tab.click();
    await expect(page.locator(PANEL)).toBeHidden();
    await page.waitForTimeout(500); // a poll that was already on its way
    const whileHidden = requests.length;
    await page.clock.fastForward(6_000); // three polls' worth
    await page.waitForTimeout(500); // a poll would be on its way by now
    expect(requests.length).toBe(whileHidden);

    // the page's clock stops: no timer fires, so only a poll made as the panel shows counts
    await pauseClock(page);
    await tab.click();
    await expect
      .poll(() => requests.length, { timeout: 15_000 })
      .toBeGreaterThan(whileHidden);
  });

  test('pauses after the idle timeout, says so, and Resume restarts', async ({
    page
  }) => {
    await openPanel(page);
    const paused = page.locator(`${PANEL} .jp-air-gpu-paused`);
    await expect(paused).toBeHidden();
    // no mouse or keyboard activity for longer than the idle timeout (15 s here)
    await page.clock.fastForward(16_000);
    await expect(paused).toBeVisible();
    await expect(paused).toContainText(/paused/i);
    await expect(paused).toContainText(/15 s|15 seconds/);

    const requests = gpuRequests(page);
    await page.clock.fastForward(10_000); // five polls' worth
    await page.waitForTimeout(500); // a poll would be on its way by now
    expect(requests).toHaveLength(0); // nothing is polled while paused

    await page.locator(`${PANEL} .jp-air-gpu-resume`).click();
    await expect(paused).toBeHidden();
    await expect.poll(() => requests.length).toBeGreaterThan(0);
    await expect(page.locator(`${PANEL} .jp-air-gpu-updated`)).toContainText(
      /just now|0 s ago|1 s ago/
    );
  });
});
