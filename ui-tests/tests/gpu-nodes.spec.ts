/**
 * GPU Resources across 4 nodes in a real JupyterLab: the Jupyter host "gpu-a" (2 simulated GPUs)
 * and 3 real `air agent` processes on simulated GPUs reporting to it (gpu-b, gpu-c whose GPU 1
 * has had an XID error, gpu-d), every second. Their server (see playwright.config.js) shows an
 * agent as lost 8 s after it stops.
 */
import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';

import { Agents } from './agents';
import { execute } from './helpers';

const port =
  process.env.AIR_UI_NODES_PORT ||
  String(Number(process.env.AIR_UI_PORT || '8911') + 3);
const baseURL = `http://localhost:${port}`;
const PANEL = '#jupyter-air-gpu';
const NODES = ['gpu-a', 'gpu-b', 'gpu-c', 'gpu-d'];

test.use({ baseURL });
test.describe.configure({ mode: 'serial' });

const agents = new Agents(baseURL);

test.beforeAll(async () => {
  await Promise.all([
    agents.start('gpu-b'),
    agents.start('gpu-c', { faults: '1:xid' }),
    agents.start('gpu-d')
  ]);
});

test.afterAll(async () => {
  await agents.stopAll();
});

/** Open the panel on the overview, once every node's GPUs are there. */
async function openOverview(page: IJupyterLabPageFixture): Promise<void> {
  await execute(page, 'jupyter-air:open-gpu-resources', { node: '' });
  await expect(page.locator(`${PANEL} .jp-air-gpu-ov-gpu`)).toHaveCount(8, {
    timeout: 20_000
  });
}

function node(page: IJupyterLabPageFixture, name: string) {
  return page.locator(`${PANEL} .jp-air-gpu-ov-node[data-node="${name}"]`);
}

test('the overview lists every node sorted by name, with a filter', async ({
  page
}) => {
  test.setTimeout(60_000);
  await openOverview(page);
  const panel = page.locator(PANEL);
  const bodies = panel.locator('.jp-air-gpu-ov-node');
  await expect(bodies).toHaveCount(4);
  expect(
    await bodies.evaluateAll(els =>
      els.map(el => (el as HTMLElement).dataset.node)
    )
  ).toEqual(NODES);
  await expect(panel.locator('.jp-air-gpu-ov-summary')).toContainText(
    '4 nodes · 8 GPUs'
  );
  const row = node(page, 'gpu-b').locator('.jp-air-gpu-ov-gpu').first();
  await expect(row.locator('.jp-air-gpu-ov-util')).toHaveText(/^\d+%$/);
  await expect(row.locator('.jp-air-gpu-ov-mem')).toContainText('GiB');
  await expect(row.locator('.jp-air-gpu-ov-temp')).toContainText('°C');
  await expect(row.locator('.jp-air-gpu-ov-power')).toContainText('W');
  // no node's charts while the overview shows
  await expect(panel.locator('.jp-air-gpu-charts')).toBeHidden();

  await panel.locator('.jp-air-gpu-filter').fill('gpu-c');
  await expect(bodies.locator('visible=true')).toHaveCount(1);
  await expect(node(page, 'gpu-c')).toBeVisible();
  await panel.locator('.jp-air-gpu-filter').fill('');
  await expect(bodies.locator('visible=true')).toHaveCount(4);
});

test("a flagged GPU, in the overview and in its node's view", async ({
  page
}) => {
  test.setTimeout(60_000);
  await openOverview(page);
  const flagged = node(page, 'gpu-c').locator(
    '.jp-air-gpu-ov-gpu[data-gpu-index="1"]'
  );
  await expect(flagged).toHaveClass(/jp-mod-flagged/);
  await expect(node(page, 'gpu-c').locator('.jp-air-gpu-flag')).toHaveText(
    /^XID errors: 1 \(last: XID 79 at \d\d:\d\d:\d\d\)$/
  );
  await expect(node(page, 'gpu-b').locator('.jp-air-gpu-flag')).toHaveCount(0);

  // the node's own view: its cards, charts and health
  await node(page, 'gpu-c').locator('.jp-air-gpu-ov-open').click();
  const panel = page.locator(PANEL);
  await expect(panel.locator('.jp-air-gpu-node')).toHaveText('gpu-c');
  const card = panel.locator('.jp-air-gpu-card[data-gpu-index="1"]');
  await expect(card).toHaveClass(/jp-mod-flagged/);
  await expect(card.locator('.jp-air-gpu-flagged')).toBeVisible();
  await expect(card.locator('.jp-air-gpu-flag')).toHaveText(/^XID errors: 1/);
  await card.locator('.jp-air-gpu-health-title').click();
  await expect(card.locator('.jp-air-gpu-health-list')).toContainText(
    /SM clock\s*\d+ \/ 1980 MHz/
  );
  await expect(card.locator('.jp-air-gpu-health-list')).toContainText(
    /Fan\s*n\/a/
  );
  await expect(
    panel.locator('.jp-air-gpu-card[data-gpu-index="0"]')
  ).not.toHaveClass(/jp-mod-flagged/);
  const util = panel.locator(
    '.jp-air-gpu-chart[data-metric="util"] .jp-air-gpu-chart-plot'
  );
  await expect(util.locator('canvas')).toBeVisible();
  await expect(util).toHaveAttribute('data-lines', '2');

  await panel.locator('.jp-air-gpu-back').click();
  await expect(panel.locator('.jp-air-gpu-overview')).toBeVisible();
  await expect(panel.locator('.jp-air-gpu-node')).toHaveText('All nodes');
});

test('the node selector picks a node, and the choice survives a reload', async ({
  page
}) => {
  test.setTimeout(60_000);
  await openOverview(page);
  const panel = page.locator(PANEL);
  await panel.locator('.jp-air-gpu-node-select').selectOption('gpu-b');
  await expect(panel.locator('.jp-air-gpu-node')).toHaveText('gpu-b');
  await expect(panel.locator('.jp-air-gpu-card')).toHaveCount(2);
  const requests: string[] = [];
  page.on('request', r => {
    if (r.url().includes('/air/api/gpu?')) {
      requests.push(r.url());
    }
  });
  await expect
    .poll(() => requests.some(u => u.includes('node=gpu-b')))
    .toBe(true);

  await page.reload();
  await execute(page, 'jupyter-air:open-gpu-resources');
  await expect(panel.locator('.jp-air-gpu-node')).toHaveText('gpu-b');
  await expect(panel.locator('.jp-air-gpu-node-select')).toHaveValue('gpu-b');
  await expect(panel.locator('.jp-air-gpu-card')).toHaveCount(2);
});

test('a node that stops reporting is stale, then lost, and back when it reports', async ({
  page
}) => {
  test.setTimeout(60_000);
  await openOverview(page);
  const d = node(page, 'gpu-d');
  await expect(d).toHaveAttribute('data-state', 'live');
  await agents.stop('gpu-d');
  // stale after 3 silent intervals (1 s each), lost after 8 s
  await expect(d).toHaveAttribute('data-state', 'stale', { timeout: 10_000 });
  await expect(d.locator('.jp-air-gpu-ov-state')).toHaveText('stale');
  await expect(d.locator('.jp-air-gpu-ov-seen')).toHaveText(
    /^last sample \d\d:\d\d:\d\d$/
  );
  await expect(d).toHaveAttribute('data-state', 'lost', { timeout: 15_000 });
  await expect(d.locator('.jp-air-gpu-ov-state')).toHaveText('lost');
  await expect(page.locator(`${PANEL} .jp-air-gpu-ov-summary`)).toContainText(
    '1 not reporting'
  );
  // its last values are still shown
  await expect(d.locator('.jp-air-gpu-ov-gpu')).toHaveCount(2);

  await agents.start('gpu-d');
  await expect(d).toHaveAttribute('data-state', 'live', { timeout: 15_000 });
  await expect(d.locator('.jp-air-gpu-ov-state')).toBeHidden();
});
