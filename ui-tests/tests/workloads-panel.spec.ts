/**
 * The Workloads panel in a real JupyterLab against real job runs (submitted with `air run`, run by
 * their supervisor on two CPU "nodes", with MLflow runs in the server's embedded MLflow): the
 * list goes live to SUCCEEDED, the job page shows attempts, links and YAML, the Experiment panel
 * leads back to the job run, `?air-workload=<id>` opens it, Cancel (confirmed) stops one, and the
 * run card of a `%%air_run` cell opens its job run and its logs.
 */
import { expect, test } from '@jupyterlab/galata';

import { failOnDialog, openNewNotebook, runFromPalette } from './helpers';
import {
  mlflowReady,
  stepsScript,
  submitWorkload,
  waitForStatus
} from './workloads-helpers';

const PANEL = '#jupyter-air-workloads';

test.describe.configure({ timeout: 240_000 });

test('a job run goes live to SUCCEEDED in the panel; its page has attempts, links, YAML', async ({
  page,
  request,
  baseURL
}) => {
  failOnDialog(page);
  const name = `panel-${Date.now()}`;
  const job = await submitWorkload(request, baseURL!, {
    name,
    script: stepsScript(12, 0.25)
  });

  await runFromPalette(page, 'Workloads', 'Open Workloads');
  const panel = page.locator(PANEL);
  await expect(panel).toBeVisible();
  const row = panel.locator(`.jp-air-wl-job[data-job-id="${job.id}"]`);
  await expect(row).toBeVisible({ timeout: 30_000 });
  await expect(row.locator('.jp-air-wl-job-name')).toHaveText(name);
  await expect(row.locator('.jp-air-wl-job-compute')).toHaveText(
    '2 nodes x CPU'
  );
  // live: it runs, then succeeds (the panel polls every 3 s while a job run is active)
  await expect(row.locator('.jp-air-wl-job-status')).toHaveText(
    /Pending|Running/
  );
  await expect(row.locator('.jp-air-wl-job-status')).toHaveText('Succeeded', {
    timeout: 60_000
  });
  await expect(row).toHaveAttribute('data-status', 'SUCCEEDED');
  await expect(row.locator('.jp-air-wl-job-attempts')).toHaveText('1 attempt');

  // the job page
  await row.click();
  const jobPage = panel.locator('.jp-air-wl-page');
  await expect(jobPage.locator('.jp-air-wl-page-name')).toHaveText(name);
  await expect(jobPage.locator('.jp-air-wl-page-status')).toHaveText(
    'Succeeded'
  );
  await expect(jobPage.locator('.jp-air-wl-cancel')).toBeDisabled();
  await expect(jobPage.locator('.jp-air-wl-yaml')).toContainText(
    'experiment_name: ui-workloads'
  );
  const attemptItem = jobPage.locator('.jp-air-wl-attempt');
  await expect(attemptItem).toHaveCount(1);
  await expect(attemptItem.locator('.jp-air-wl-attempt-nodes')).toHaveText(
    'node 0: exit 0 · node 1: exit 0'
  );
  await expect(attemptItem.locator('.jp-air-wl-attempt-run')).toHaveAttribute(
    'href',
    /\/air\/mlflow\/#\/experiments\/\d+\/runs\/[0-9a-f]+/
  );
  await expect(
    attemptItem.locator('.jp-air-wl-attempt-metrics')
  ).toHaveAttribute('href', /system-metrics/);

  // Logs opens the Logs view on this job run
  await jobPage.locator('.jp-air-wl-logs').click();
  const logs = page.locator(`.jp-air-logs[data-job-id="${job.id}"]`);
  await expect(logs.locator('.jp-air-logs-row').last()).toContainText(
    'node 0 done green'
  );

  // Open experiment: the Experiment panel, where the run leads back to the job run
  await jobPage.locator('.jp-air-wl-open-experiment').click();
  const experiments = page.locator('#jupyter-air-experiments');
  await expect(experiments).toBeVisible();
  const workloadLink = experiments
    .locator('.jp-air-exp-run-workload:visible')
    .first();
  await expect(workloadLink).toBeVisible({ timeout: 30_000 });
  await workloadLink.click();
  await expect(panel).toBeVisible();
  await expect(panel.locator('.jp-air-wl-page-name')).toHaveText(name);
});

test('?air-workload=<id> opens the job run; Cancel (confirmed) stops it', async ({
  page,
  request,
  baseURL
}) => {
  const job = await submitWorkload(request, baseURL!, {
    name: `cancel-${Date.now()}`,
    script: stepsScript(600, 0.2)
  });
  await waitForStatus(request, baseURL!, job.id, /RUNNING/);

  await page.goto(`?air-workload=${job.id}`);
  const panel = page.locator(PANEL);
  await expect(panel).toBeVisible();
  const jobPage = panel.locator('.jp-air-wl-page');
  await expect(jobPage).toHaveAttribute('data-job-id', job.id);
  await expect(jobPage.locator('.jp-air-wl-page-status')).toHaveText('Running');
  const cancel = jobPage.locator('.jp-air-wl-cancel');
  await expect(cancel).toBeEnabled();

  // declined: still running
  await cancel.click();
  const dialog = page.locator('.jp-Dialog');
  await expect(dialog).toContainText(`job run ${job.id}`);
  await dialog.getByRole('button', { name: 'Keep running' }).click();
  await expect(dialog).toHaveCount(0);
  await expect(jobPage.locator('.jp-air-wl-page-status')).toHaveText('Running');

  // confirmed: cancelled
  await cancel.click();
  await dialog.getByRole('button', { name: 'Cancel job run' }).click();
  await expect(jobPage.locator('.jp-air-wl-page-status')).toHaveText(
    'Cancelled',
    {
      timeout: 60_000
    }
  );
  await expect(cancel).toBeDisabled();
  await waitForStatus(request, baseURL!, job.id, /CANCELLED/, 5_000);
});

test('%%air_run in a notebook: the attempt card opens its job run and its logs', async ({
  page,
  request,
  baseURL,
  tmpPath
}) => {
  failOnDialog(page);
  await mlflowReady(request, baseURL!);
  await openNewNotebook(page, `${tmpPath}/air-run.ipynb`, [
    [
      '%%air_run --gpus 2 --experiment ui-air-run --run-name from-a-cell',
      'import os',
      "print(f\"rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']} says hello\", flush=True)"
    ].join('\n')
  ]);
  await page.notebook.runCell(0, true);
  // the logs streamed into the cell, and the attempt's run card
  const output = page.locator('.jp-OutputArea-output');
  await expect(output.getByText('rank 1 of 2 says hello')).toBeVisible({
    timeout: 60_000
  });
  const card = page.locator('.jp-air-run');
  await expect(card.locator('.jp-air-run-name')).toHaveText('from-a-cell');
  await expect(card.locator('.jp-air-run-status')).toHaveText(/finished/i, {
    timeout: 30_000
  });

  await card.locator('.jp-air-run-open-workload').click();
  const jobPage = page.locator(`${PANEL} .jp-air-wl-page`);
  await expect(jobPage.locator('.jp-air-wl-page-name')).toHaveText(
    'from-a-cell'
  );
  await expect(jobPage.locator('.jp-air-wl-page-status')).toHaveText(
    'Succeeded'
  );
  const jobId = await jobPage.getAttribute('data-job-id');

  await card.locator('.jp-air-run-open-logs').click();
  const logs = page.locator(`.jp-air-logs[data-job-id="${jobId}"]`);
  await expect(logs).toBeVisible();
  await expect(logs.getByText('rank 0 of 2 says hello')).toBeVisible();
  await expect(logs.getByText('rank 1 of 2 says hello')).toBeVisible();
});
