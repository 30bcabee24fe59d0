/**
 * The live widget of a running `.distributed()` call (jupyter_air/notebook/live_widget.py) in a real
 * notebook: 2 CPU ranks (gloo) where rank 0 logs `train_loss` by step. While the call runs the
 * cell shows a status line whose step count rises and a chart with points; the run card is what
 * remains once it ended (the training runs until the test has seen all that: it stops when the
 * test writes a file). Cancel stops a second call (no rank process left), and meanwhile the GPU
 * panel (simulated GPUs) shows the ranks' processes linked to the call's MLflow run.
 */
import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';

import { execute, openNewNotebook } from './helpers';

const SETUP = `
import os
from jupyter_air import distributed
PIDS = os.getcwd()  # the notebook's folder: the test reads the ranks' pids from there

@distributed(gpus=2)
def train(steps, pause, until=None):
    # until: a file whose appearance ends the training (both ranks see it at the same step)
    import os, time
    import torch
    import torch.distributed as dist
    dist.init_process_group()
    rank = dist.get_rank()
    with open(os.path.join(PIDS, f"rank-{rank}.pid"), "w") as f:
        f.write(str(os.getpid()))
    if rank == 0:
        import mlflow
    for step in range(steps):
        stop = torch.tensor([float(bool(until) and os.path.exists(os.path.join(PIDS, until)))])
        dist.all_reduce(stop)
        if stop.item() > 0:
            break
        if rank == 0:
            mlflow.log_metric("train_loss", 1.0 / (step + 1), step=step)
        time.sleep(pause)
    return rank
`;

/** Whether a process of this machine is running (the test and the server share it). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const LIVE = '.jp-air-live';

function step(text: string): number {
  const found = /step (\d+)/.exec(text);
  return found ? Number(found[1]) : -1;
}

/** Run a cell without waiting for it (Galata's runCell holds the page until it ends). */
async function startCell(
  page: IJupyterLabPageFixture,
  index: number
): Promise<void> {
  await page.notebook.selectCells(index);
  await page.keyboard.press('Control+Enter');
  await expect(page.locator(LIVE)).toHaveCount(1, { timeout: 90000 });
}

/** The call ended: the widget is gone. */
async function ended(page: IJupyterLabPageFixture): Promise<void> {
  await expect(page.locator(LIVE)).toHaveCount(0, { timeout: 90000 });
}

test.describe('Live widget', () => {
  test.setTimeout(300 * 1000);

  test('shows a rising step count and a chart while the call runs, then the run card', async ({
    page,
    tmpPath
  }) => {
    await openNewNotebook(page, `${tmpPath}/live.ipynb`, [
      SETUP,
      'results = train.distributed(600, 0.5, "live-enough")\nprint("results", results)'
    ]);
    await page.notebook.runCell(0, true);
    await startCell(page, 1);

    const status = page.locator(`${LIVE} .jp-air-live-status`);
    await expect(status).toContainText('RUNNING');
    await expect(status).toContainText('2 CPU ranks');
    // deadlines are last guards: the ranks start (torch, gloo) as slowly as the machine is
    await expect
      .poll(async () => step(await status.innerText()), {
        timeout: 90000
      })
      .toBeGreaterThanOrEqual(0);
    const first = step(await status.innerText());
    await expect
      .poll(async () => step(await status.innerText()), { timeout: 60000 })
      .toBeGreaterThan(first);
    // the chart: one trace (train_loss) with a marker per step read
    const points = page.locator('.js-plotly-plot .scatterlayer .trace .point');
    await expect
      .poll(() => points.count(), { timeout: 60000 })
      .toBeGreaterThan(1);
    await expect(page.locator('.js-plotly-plot .legendtext')).toHaveCount(0); // one trace: no legend
    await expect(page.locator(`${LIVE} .jp-air-live-cancel`)).toBeVisible();

    // the training goes on until the test has seen it run, however slow the machine is
    await page.contents.uploadContent('', 'text', `${tmpPath}/live-enough`);
    await ended(page);
    const card = page.locator('.jp-air-run');
    await expect(card).toHaveCount(1);
    await expect(card.locator('.jp-air-run-status')).toHaveText(/finished/i);
    await expect(page.locator('.jp-Notebook')).toContainText('results [0, 1]', {
      timeout: 20000
    });
  });
});

test.describe('Live widget Cancel', () => {
  test.setTimeout(150 * 1000);
  // Galata's kernels mock reads every POST answer as JSON; an interrupt answers 204 (no body).
  // The notebook's session, still tracked, ends its kernel after the test.
  test.use({ kernels: null });

  test('Cancel stops every rank; meanwhile the GPU panel links the ranks to the run', async ({
    page,
    tmpPath,
    request,
    baseURL
  }) => {
    await openNewNotebook(page, `${tmpPath}/cancel.ipynb`, [
      SETUP,
      'train.distributed(300, 0.5)'
    ]);
    await page.notebook.runCell(0, true);
    await startCell(page, 1);
    const status = page.locator(`${LIVE} .jp-air-live-status`);
    await expect
      .poll(async () => step(await status.innerText()), { timeout: 60000 })
      .toBeGreaterThanOrEqual(0);

    // the ranks' processes on the simulated GPUs, each with its rank and a link to the run
    const runLink = await page
      .locator(`${LIVE} a`, { hasText: 'Run' })
      .first()
      .getAttribute('href');
    const runId = /runs\/([0-9a-f]{32})/.exec(runLink ?? '')?.[1];
    expect(runId).toBeTruthy();
    await execute(page, 'jupyter-air:open-gpu-resources');
    const panel = page.locator('#jupyter-air-gpu');
    await expect(panel).toBeVisible();
    await panel.locator('.jp-air-gpu-refresh').click();
    const runs = panel.locator('.jp-air-gpu-process-run', {
      hasText: `run ${runId!.slice(0, 8)}`
    });
    await expect(runs.filter({ hasText: 'rank 0' })).not.toHaveCount(0, {
      timeout: 15000
    });
    await expect(runs.filter({ hasText: 'rank 1' })).not.toHaveCount(0);
    await expect(runs.first().locator('a').first()).toHaveAttribute(
      'href',
      new RegExp(`runs/${runId}$`)
    );

    await page.locator(`${LIVE} .jp-air-live-cancel`).click();
    await ended(page);
    await expect(page.locator('.jp-air-run-status')).toHaveText(/killed/i);
    await expect(page.locator('.jp-Notebook')).toContainText(
      /stopped 2 ranks/,
      {
        timeout: 20000
      }
    );
    // no rank process is left
    const pids: number[] = [];
    for (const rank of [0, 1]) {
      const answer = await request.get(
        `${baseURL}/api/contents/${tmpPath}/rank-${rank}.pid?content=1&type=file&format=text`
      );
      expect(answer.ok()).toBe(true);
      pids.push(Number((await answer.json()).content));
    }
    expect(pids.every(pid => pid > 0)).toBe(true);
    expect(pids.filter(running)).toEqual([]);
  });
});
