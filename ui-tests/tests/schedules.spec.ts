/**
 * The Schedules section of the Workloads panel in a real JupyterLab: a schedule made with
 * `air schedule create` (on the test server's data folder) before the page loads shows its cron,
 * timezone and next firing; Pause turns it paused, and the server's API says so.
 */
import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';

import { failOnDialog, runFromPalette } from './helpers';
import { air, scratchDir } from './workloads-helpers';

const PANEL = '#jupyter-air-workloads';

interface ISchedule {
  id: string;
  name: string;
  paused: boolean;
  next_firing_at: number | null;
}

test('a schedule shows its next firing; Pause pauses it on the server', async ({
  page,
  request,
  baseURL
}) => {
  failOnDialog(page);
  const name = `ui-nightly-${Date.now()}`;
  const dir = scratchDir('air-ui-schedule-');
  const file = path.join(dir, 'nightly.yaml');
  fs.writeFileSync(
    file,
    [
      'experiment_name: ui-schedules',
      'compute: {accelerator_type: CPU}',
      'command: echo hi',
      'schedule: {cron: "0 3 * * *", timezone: Europe/Paris}',
      ''
    ].join('\n')
  );
  const made = (await air(baseURL!, [
    'schedule',
    'create',
    file,
    '--name',
    name
  ])) as ISchedule;
  expect(made.next_firing_at).not.toBeNull();
  try {
    await page.reload(); // the page loads with the schedule in the store
    await runFromPalette(page, 'Workloads', 'Open Workloads');
    const panel = page.locator(PANEL);
    const section = panel.locator('.jp-air-wl-schedules');
    await expect(section.locator('.jp-air-wl-schedules-title')).toHaveText(
      'Schedules'
    );
    const row = section.locator(
      `.jp-air-wl-schedule[data-schedule-id="${made.id}"]`
    );
    await expect(row.locator('.jp-air-wl-schedule-name')).toHaveText(name);
    await expect(row.locator('.jp-air-wl-schedule-when')).toHaveText(
      '0 3 * * * (Europe/Paris)'
    );
    const next = row.locator('.jp-air-wl-schedule-next-time');
    await expect(next).toHaveAttribute(
      'datetime',
      new Date(made.next_firing_at! * 1000).toISOString()
    );
    await expect(row.locator('.jp-air-wl-schedule-state')).toHaveText('Active');
    await expect(row.locator('.jp-air-wl-schedule-runs')).toHaveText(
      'No runs yet'
    );

    await row.locator('.jp-air-wl-schedule-toggle').click();
    await expect(row).toHaveAttribute('data-paused', 'true');
    await expect(row.locator('.jp-air-wl-schedule-state')).toHaveText('Paused');
    await expect(next).toHaveText('—');
    await expect(row.locator('.jp-air-wl-schedule-toggle')).toHaveText(
      'Resume'
    );
    const answer = await request.get(`${baseURL}/air/api/schedules/${made.id}`);
    expect(answer.ok()).toBe(true);
    const served = (await answer.json()) as ISchedule;
    expect(served.paused).toBe(true);
    expect(served.next_firing_at).toBeNull();
  } finally {
    await air(baseURL!, ['schedule', 'delete', made.id]);
  }
});
