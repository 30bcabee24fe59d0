/**
 * Render time of the GPU panel per update, in Chromium: 8 simulated GPUs, a full history of 720
 * samples per GPU (0.05 s interval × 38 s window here, the same point count as 10 s × 2 h).
 * Reads the panel's `jupyter-air:gpu-render` performance measures and prints figures.
 */
import { expect, test } from '@jupyterlab/galata';

import { execute } from '../tests/helpers';

const HISTORY_POINTS = 720;

function stats(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return {
    n: sorted.length,
    median: at(0.5),
    p95: at(0.95),
    max: sorted[sorted.length - 1]
  };
}

test('GPU panel render time per update, 8 GPUs x 720 points', async ({
  page,
  request,
  baseURL
}) => {
  // fill the server's history: one request wakes sampling, which runs for the idle timeout
  await request.get(`${baseURL}/air/api/gpu`);
  await expect
    .poll(
      async () => {
        const r = await request.get(`${baseURL}/air/api/gpu`);
        return (await r.json()).samples.length;
      },
      { timeout: 120000, intervals: [2000] }
    )
    .toBeGreaterThanOrEqual(HISTORY_POINTS);

  await page.evaluate(() => performance.clearMeasures('jupyter-air:gpu-render'));
  await execute(page, 'jupyter-air:open-gpu-resources');
  await expect(page.locator('#jupyter-air-gpu .jp-air-gpu-card')).toHaveCount(8);
  // the panel polls every 0.05 s here: let it run ~100 updates
  await page.waitForTimeout(8000);
  const durations: number[] = await page.evaluate(() =>
    performance
      .getEntriesByName('jupyter-air:gpu-render')
      .map(entry => entry.duration)
  );
  const points = await page.evaluate(() => {
    const plot = document.querySelector(
      '#jupyter-air-gpu .jp-air-gpu-chart .js-plotly-plot'
    ) as any;
    return plot?.data?.map((trace: any) => trace.x.length) ?? [];
  });
  expect(durations.length).toBeGreaterThan(10);
  const first = durations[0];
  const updates = stats(durations.slice(1));
  const line =
    `panel render: first (full history) ${first.toFixed(1)} ms; ` +
    `per update over ${updates.n} updates: median ${updates.median.toFixed(1)} ms, ` +
    `p95 ${updates.p95.toFixed(1)} ms, max ${updates.max.toFixed(1)} ms ` +
    `(target < 16 ms); points per trace ${JSON.stringify(points)}`;
  console.log(line);
  test.info().annotations.push({ type: 'figures', description: line });
});
