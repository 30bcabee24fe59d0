/**
 * The README's screenshot of the panel (docs/img/gpu-panel.png), on simulated GPUs next to a
 * notebook whose kernel shows up as a GPU process. Run with `make screenshot`.
 */
import { expect, test } from '@jupyterlab/galata';
import * as path from 'path';

import { execute, openNewNotebook } from '../tests/helpers';

test.use({ viewport: { width: 1440, height: 1500 } });

test('README screenshot', async ({ page, request, baseURL, tmpPath }) => {
  await openNewNotebook(page, `${tmpPath}/train-llm.ipynb`);
  await page.notebook.setCell(0, 'code', 'print("training on the GPUs of this node…")');
  await page.notebook.runCell(0, true);
  // let some history build up
  await request.get(`${baseURL}/air/api/gpu`);
  await page.waitForTimeout(Number(process.env.AIR_SCREENSHOT_WAIT || 60000));
  await execute(page, 'jupyter-air:open-gpu-resources');
  await expect(page.locator('#jupyter-air-gpu .jp-air-gpu-processes')).toContainText(
    'train-llm.ipynb',
    { timeout: 20000 }
  );
  // a wider sidebar, so the charts and the processes table read well
  const handle = page.locator('#jp-main-split-panel > .lm-SplitPanel-handle:not(.lm-mod-hidden)').last();
  const box = await handle.boundingBox();
  if (box) {
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x - 260, box.y + box.height / 2, { steps: 10 });
    await page.mouse.up();
  }
  await page.waitForTimeout(1500);
  await page.screenshot({
    clip: { x: 0, y: 0, width: 1440, height: 1010 },
    path: path.resolve(__dirname, '..', '..', 'docs', 'img', 'gpu-panel.png')
  });
});
