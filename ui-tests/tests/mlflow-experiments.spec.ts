/**
 * The Experiments panel and the MLflow tab in a real JupyterLab, against a fixed MLflow API
 * (the `air/api/runs|experiments|mlflow` answers and the MLflow UI are served by the test), so
 * what the frontend does is checked whatever state the embedded MLflow server is in.
 */
import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import type { Route } from '@playwright/test';

import {
  HOSTILE,
  execute,
  failOnDialog,
  gotoOnClock,
  openNewNotebook
} from './helpers';

const PANEL = '#jupyter-air-experiments';
const NOW = Date.now();

function links(experimentId: string, runId: string) {
  return {
    run: `#/experiments/${experimentId}/runs/${runId}`,
    system_metrics: `#/experiments/${experimentId}/runs/${runId}/system-metrics`,
    experiment: `#/experiments/${experimentId}/runs`
  };
}

function run(runId: string, overrides: Record<string, unknown> = {}) {
  return {
    run_id: runId,
    run_name: runId,
    status: 'FINISHED',
    start_time: NOW - 600_000,
    end_time: NOW - 540_000,
    parent_run_id: null,
    metrics: { loss: 0.25 },
    tags: {},
    links: links('1', runId),
    ...overrides
  };
}

const MLFLOW = {
  mode: 'embedded',
  state: 'ready',
  tracking_uri: 'http://127.0.0.1:5999',
  ui: '/air/mlflow/',
  elapsed_s: null,
  error: null,
  restarts: 0
};

/** Serve a fixed MLflow API and UI; returns the runs queries seen. */
async function fakeMlflow(
  page: IJupyterLabPageFixture
): Promise<URLSearchParams[]> {
  const queries: URLSearchParams[] = [];
  await page.route(/\/air\/api\/mlflow(\?|$)/, (route: Route) =>
    route.fulfill({ json: MLFLOW })
  );
  await page.route(/\/air\/api\/experiments(\?|$)/, (route: Route) =>
    route.fulfill({
      json: {
        mlflow: MLFLOW,
        experiments: [
          {
            experiment_id: '1',
            name: '/Users/test/a.ipynb',
            last_update_time: NOW
          },
          { experiment_id: '2', name: 'baseline', last_update_time: NOW }
        ]
      }
    })
  );
  await page.route(/\/air\/api\/runs\?/, (route: Route) => {
    const query = new URL(route.request().url()).searchParams;
    queries.push(query);
    const status = query.get('status');
    const notebook = query.get('notebook') ?? '';
    let answer: Record<string, unknown>;
    if (query.get('experiment_id') === '2') {
      answer = {
        experiment: { experiment_id: '2', name: 'baseline' },
        experiment_name: 'baseline',
        runs: [run('base-1', { links: links('2', 'base-1') })]
      };
    } else if (
      notebook.endsWith('a.ipynb') ||
      query.get('experiment_id') === '1'
    ) {
      answer = {
        experiment: { experiment_id: '1', name: '/Users/test/a.ipynb' },
        experiment_name: '/Users/test/a.ipynb',
        runs: [
          run('sweep', {
            run_name: HOSTILE,
            status: 'RUNNING',
            end_time: null
          }),
          run('trial-1', { parent_run_id: 'sweep' }),
          run('trial-2', { parent_run_id: 'sweep', status: 'FAILED' }),
          run('older')
        ]
      };
    } else {
      answer = {
        experiment: null,
        experiment_name: `/Users/test/${notebook.split('/').pop()}`,
        runs: []
      };
    }
    const runs = (answer.runs as { status: string }[]).filter(
      r => !status || r.status === status
    );
    return route.fulfill({
      json: { mlflow: MLFLOW, truncated: false, ...answer, runs }
    });
  });
  await page.route(/\/air\/mlflow\//, (route: Route) =>
    route.fulfill({
      contentType: 'text/html',
      body: '<!doctype html><title>MLflow</title><h1 id="fake-mlflow">Fake MLflow UI</h1>'
    })
  );
  return queries;
}

async function openNotebook(
  page: IJupyterLabPageFixture,
  path: string
): Promise<void> {
  await openNewNotebook(page, path);
  await page.notebook.activate(path.split('/').pop()!);
}

/**
 * The fixed API, notebook a.ipynb (4 runs) open and the panel opened on it: the runs queries
 * seen, and the panel.
 */
async function showNotebookA(page: IJupyterLabPageFixture, tmpPath: string) {
  const queries = await fakeMlflow(page);
  await openNotebook(page, `${tmpPath}/a.ipynb`);
  await execute(page, 'jupyter-air:open-experiments');
  return { queries, panel: page.locator(PANEL) };
}

test.describe('Experiments panel (fixed MLflow API)', () => {
  test.beforeEach(async ({ page }) => {
    failOnDialog(page);
  });

  test('is in the right sidebar and asks for a notebook without one', async ({
    page
  }) => {
    await fakeMlflow(page);
    const tab = page.locator(
      '.jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id="jupyter-air-experiments"]'
    );
    await expect(tab).toBeVisible();
    await expect(tab).toHaveAttribute('title', /Experiments/);
    await tab.click();
    await expect(page.locator(PANEL)).toBeVisible();
    await expect(page.locator(`${PANEL} .jp-air-exp-message`)).toHaveText(
      'Open a notebook to see its experiment'
    );
  });

  test('follows the active notebook and shows its runs, nested', async ({
    page,
    tmpPath
  }) => {
    const { queries, panel } = await showNotebookA(page, tmpPath);
    await expect(panel.locator('.jp-air-exp-name')).toHaveText(
      '/Users/test/a.ipynb'
    );
    await expect(panel.locator('.jp-air-exp-source')).toHaveText(
      'Notebook a.ipynb'
    );

    const sweep = panel.locator('.jp-air-exp-run[data-run-id="sweep"]');
    await expect(
      sweep.locator('> .jp-air-exp-run-row .jp-air-exp-run-name')
    ).toHaveText(HOSTILE);
    await expect(panel.locator('img')).toHaveCount(0);
    await expect(
      sweep.locator('> .jp-air-exp-run-row .jp-air-exp-run-status')
    ).toHaveText(/running/i);
    await expect(
      sweep.locator('.jp-air-exp-run-children > .jp-air-exp-run')
    ).toHaveCount(2);
    await expect(
      panel.locator('.jp-air-exp-runs > .jp-air-exp-run')
    ).toHaveCount(2); // sweep and older; the trials are nested
    expect(queries[queries.length - 1].get('notebook')).toBe(
      `${tmpPath}/a.ipynb`
    );

    // another notebook: its (empty) experiment
    await openNotebook(page, `${tmpPath}/b.ipynb`);
    await expect(panel.locator('.jp-air-exp-message')).toHaveText(
      'No runs yet in /Users/test/b.ipynb'
    );
    expect(queries[queries.length - 1].get('notebook')).toBe(
      `${tmpPath}/b.ipynb`
    );

    // back to the first one
    await page.notebook.activate('a.ipynb');
    await expect(panel.locator('.jp-air-exp-name')).toHaveText(
      '/Users/test/a.ipynb'
    );
    await expect(
      panel.locator('.jp-air-exp-run[data-run-id="older"]')
    ).toBeVisible();
  });

  test('filters by status, switches experiment and back', async ({
    page,
    tmpPath
  }) => {
    const { queries, panel } = await showNotebookA(page, tmpPath);
    await expect(panel.locator('.jp-air-exp-run')).toHaveCount(4);

    await panel.locator('.jp-air-exp-filter').selectOption('FAILED');
    await expect(panel.locator('.jp-air-exp-run')).toHaveCount(1);
    await expect(panel.locator('.jp-air-exp-run')).toHaveAttribute(
      'data-run-id',
      'trial-2'
    );
    await expect
      .poll(() => queries[queries.length - 1].get('status'))
      .toBe('FAILED');
    await panel.locator('.jp-air-exp-filter').selectOption('ALL');
    await expect(panel.locator('.jp-air-exp-run')).toHaveCount(4);

    await panel
      .locator('.jp-air-exp-select')
      .selectOption({ label: 'baseline' });
    await expect(panel.locator('.jp-air-exp-name')).toHaveText('baseline');
    await expect(
      panel.locator('.jp-air-exp-run[data-run-id="base-1"]')
    ).toBeVisible();
    expect(queries[queries.length - 1].get('experiment_id')).toBe('2');

    await panel.locator('.jp-air-exp-back').click();
    await expect(panel.locator('.jp-air-exp-name')).toHaveText(
      '/Users/test/a.ipynb'
    );
    await expect(panel.locator('.jp-air-exp-back')).toBeHidden();
  });

  test('a run opens in the MLflow tab', async ({ page, tmpPath }) => {
    const { panel } = await showNotebookA(page, tmpPath);
    await panel
      .locator('.jp-air-exp-run[data-run-id="trial-1"] > .jp-air-exp-run-row')
      .click();
    const tab = page.locator('#jupyter-air-mlflow');
    await expect(tab).toBeVisible();
    await expect(
      page.locator('.lm-DockPanel-tabBar .lm-TabBar-tab', { hasText: 'MLflow' })
    ).toBeVisible();
    const iframe = tab.locator('iframe');
    await expect(iframe).toHaveAttribute(
      'src',
      '/air/mlflow/#/experiments/1/runs/trial-1'
    );
    await expect(
      page.frameLocator('#jupyter-air-mlflow iframe').locator('#fake-mlflow')
    ).toHaveText('Fake MLflow UI');

    // another run: the same tab, navigated
    await panel
      .locator('.jp-air-exp-run[data-run-id="older"] > .jp-air-exp-run-row')
      .click();
    await expect(iframe).toHaveAttribute(
      'src',
      '/air/mlflow/#/experiments/1/runs/older'
    );
    await expect(page.locator('#jupyter-air-mlflow')).toHaveCount(1);
  });

  test('highlights the run it is opened on', async ({ page, tmpPath }) => {
    await fakeMlflow(page);
    await openNotebook(page, `${tmpPath}/a.ipynb`);
    await execute(page, 'jupyter-air:open-experiments', {
      experiment_id: '1',
      run_id: 'trial-2'
    });
    const row = page.locator(`${PANEL} .jp-air-exp-run[data-run-id="trial-2"]`);
    await expect(row).toHaveClass(/jp-mod-highlighted/);
    await expect(row).toBeInViewport();
  });
});

// On the page's clock (helpers.ts gotoOnClock): the panel's polls are timers, moved on by the
// test rather than waited for
test.describe('Experiments panel polling, on the page clock', () => {
  test.use({ autoGoto: false });
  test.beforeEach(async ({ page, tmpPath }) => {
    failOnDialog(page);
    await gotoOnClock(page, tmpPath);
  });

  test('polls every 5 s while a run is running, nothing while hidden', async ({
    page,
    tmpPath
  }) => {
    let answered = 0; // runs queries whose answer reached the page
    page.on('requestfinished', request => {
      if (/\/air\/api\/runs\?/.test(request.url())) {
        answered++;
      }
    });
    const { queries } = await showNotebookA(page, tmpPath);
    await expect(page.locator(`${PANEL} .jp-air-exp-run`)).toHaveCount(4);
    // one query more with each 5 s of the page's time (30 s when no run is running). The next
    // poll's timer is set once the last answer was handled: the page's time jumps only after
    // that, else the jump would come before the timer (as it did on a loaded machine)
    for (let poll = 1; poll <= 2; poll++) {
      await expect.poll(() => answered).toBe(queries.length);
      await page.evaluate(() => new Promise(resolve => setTimeout(resolve, 0)));
      const before = queries.length;
      await page.clock.fastForward(5_000);
      // within 10 s of the page's clock (which goes on as it runs): the 5 s cadence, not 30 s
      await expect
        .poll(() => queries.length, { timeout: 10_000 })
        .toBeGreaterThan(before);
    }

    await page
      .locator('.lm-TabBar-tab[data-id="jupyter-air-experiments"]')
      .click();
    await expect(page.locator(PANEL)).toBeHidden();
    await page.waitForTimeout(500); // a query that was already on its way
    const hidden = queries.length;
    await page.clock.fastForward(15_000); // three polls' worth
    await page.waitForTimeout(500); // a query would be on its way by now
    expect(queries.length).toBe(hidden);
  });
});
