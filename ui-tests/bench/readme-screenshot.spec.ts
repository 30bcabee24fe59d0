/**
 * The README's screenshot of the panel (docs/img/gpu-panel.png), on simulated GPUs next to a
 * notebook whose kernel shows up as a GPU process. Run with `make screenshot`.
 */
import { expect, test } from '@jupyterlab/galata';
import * as path from 'path';

test.use({ viewport: { width: 1440, height: 900 } });

test('README screenshot', async ({ page, request, baseURL }) => {
  await page.notebook.createNew('train-llm.ipynb', { kernel: 'python3' });
  await page.notebook.setCell(0, 'code', 'import torch  # your training here');
  // let some history build up
  await request.get(`${baseURL}/air/api/gpu`);
  await page.waitForTimeout(Number(process.env.AIR_SCREENSHOT_WAIT || 60000));
  await page.evaluate(async () => {
    await (window as any).jupyterapp.commands.execute(
      'jupyter-air:open-gpu-resources'
    );
  });
  await expect(page.locator('#jupyter-air-gpu .jp-air-gpu-processes')).toContainText(
    'train-llm.ipynb',
    { timeout: 20000 }
  );
  await page.waitForTimeout(1500);
  await page.screenshot({
    path: path.resolve(__dirname, '..', '..', 'docs', 'img', 'gpu-panel.png')
  });
});
