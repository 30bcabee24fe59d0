/**
 * The Logs tab on MLflow's run page (src/mlflow-page/): the route it watches, the tab it adds to
 * a DOM shaped like MLflow 3.17's run page, the fallback link, access refused, and following.
 */
import { defaultFilters } from '../logs/query';
import {
  RunLogsClient,
  RunLogsError,
  pageBaseUrl,
  runLogsDownloadUrl
} from '../mlflow-page/client';
import { RunPageLogs } from '../mlflow-page/page';
import { ILogsPanelOptions, LogsPanel, NO_ACCESS } from '../mlflow-page/panel';
import { parseRunRoute } from '../mlflow-page/route';
import { RUN_PAGE_ROUTES } from '../mlflow-page/shape';
import { findRunPageShape } from '../mlflow-page/tab';
import { HOSTILE } from './helpers';
import { FakeLogsServer, runningJob } from './workloads-fixtures';

const RUN = '0123456789abcdef0123456789abcdef';
const BASE = '/user/alice/';

/** The run page of MLflow 3.17 as it is drawn (classes are emotion's, generated). */
function mlflowRunPage(): { tabs: HTMLElement[]; content: HTMLElement } {
  document.body.innerHTML = `
    <div id="root"><div class="css-iudmw0"><aside>MLflow 3.17.2</aside>
    <main class="css-11b20zu"><div class="css-nva4x7"><div class="css-p4okhq"></div>
      <div class="css-ozd7xs"><div class="css-108lr2i">run name</div>
        <div class="css-1rhtv72"><div class="css-m4dulj"><div class="css-naa195">
          <style>[data-radix-scroll-area-viewport]{}</style>
          <div class="css-jk4gyd"><div>
            <div role="tablist" data-component-id="mlflow.run-page.view-mode-switch"
                 class="css-10mejol" data-orientation="horizontal">
              <button type="button" role="tab" aria-selected="true" data-state="active"
                class="css-8hx22t" data-orientation="horizontal">Overview</button>
              <button type="button" role="tab" aria-selected="false" data-state="inactive"
                class="css-8hx22t" data-orientation="horizontal">Model metrics</button>
              <button type="button" role="tab" aria-selected="false" data-state="inactive"
                class="css-8hx22t" data-orientation="horizontal">Artifacts</button>
            </div></div></div>
        </div></div></div>
      </div>
      <div class="css-1ji5wao" id="content">Description …</div>
    </div></main></div></div>`;
  return {
    tabs: Array.from(document.querySelectorAll<HTMLElement>('[role="tab"]')),
    content: document.getElementById('content')!
  };
}

/** A client answering from a fake logs server (`null`: the run has no job run). */
function fakeClient(
  server: FakeLogsServer | null,
  error: RunLogsError | null = null
): RunLogsClient {
  return {
    baseUrl: BASE,
    logs: (...args: Parameters<FakeLogsServer['fetchLogs']>) => {
      if (error !== null) {
        return Promise.reject(error);
      }
      if (server === null) {
        return Promise.reject(new RunLogsError(404, 'not a job run'));
      }
      return server.fetchLogs(...args);
    },
    job: () => Promise.resolve(runningJob('abc123def456'))
  } as unknown as RunLogsClient;
}

/** A logs panel on `server`'s run, given the run's first page as the page fetches it. */
async function logsPanel(
  server: FakeLogsServer,
  options: Partial<ILogsPanelOptions> = {}
): Promise<LogsPanel> {
  return new LogsPanel({
    client: fakeClient(server),
    runId: RUN,
    first: await server.fetchLogs('', defaultFilters(), {
      tail: true,
      limit: 1
    }),
    ...options
  });
}

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) {
    await Promise.resolve();
  }
}

describe('the run route', () => {
  it('is found in every form of MLflow run page route', () => {
    for (const form of RUN_PAGE_ROUTES) {
      const hash = `#${form.replace(':experimentId', '12').replace(':runUuid', RUN)}`;
      expect(parseRunRoute(hash)?.runId).toBe(RUN);
    }
    expect(parseRunRoute(`#/experiments/12/runs/${RUN}`)).toEqual({
      experimentId: '12',
      runId: RUN
    });
    expect(
      parseRunRoute(
        `#/experiments/12/runs/${RUN.toUpperCase()}/system-metrics?workflowType=machine_learning`
      )
    ).toEqual({ experimentId: '12', runId: RUN });
    expect(parseRunRoute(`#/runs/${RUN}`)).toEqual({
      experimentId: null,
      runId: RUN
    });
  });

  it('is not found on other pages', () => {
    for (const hash of [
      '',
      '#/',
      '#/experiments/12/runs',
      '#/experiments/12/runs/abc',
      `#/experiments/12/runs/${RUN}0`,
      `#/experiments/12/traces/${RUN}`,
      '#/experiments/%E0%A4%A'
    ]) {
      expect(parseRunRoute(hash)).toBeNull();
    }
  });
});

describe('the server calls', () => {
  it('use the base URL of the script tag, else of the page', () => {
    const script = document.createElement('script');
    script.dataset.baseUrl = '/user/bob';
    expect(pageBaseUrl(script, '/whatever/')).toBe('/user/bob/');
    expect(pageBaseUrl(null, '/user/alice/air/mlflow/')).toBe('/user/alice/');
    expect(pageBaseUrl(null, '/air/mlflow/')).toBe('/');
  });

  it('download what matches, with the same query as the logs', () => {
    const url = runLogsDownloadUrl(BASE, RUN, {
      ...defaultFilters(),
      node: 1,
      levels: ['error'],
      q: 'a b'
    });
    expect(url).toBe(
      `/user/alice/air/api/runs/${RUN}/logs/download?node=1&level=error&q=a+b`
    );
  });

  it("say the server's message when it refuses", async () => {
    const calls: string[] = [];
    const client = new RunLogsClient(BASE, async input => {
      calls.push(input);
      return {
        ok: false,
        status: 403,
        statusText: 'Forbidden',
        json: async () => ({ message: "You don't have access to these logs." }),
        text: async () => ''
      };
    });
    const error = await client
      .logs(RUN, defaultFilters(), { tail: true, limit: 1 })
      .catch(e => e);
    expect(error).toBeInstanceOf(RunLogsError);
    expect(error.status).toBe(403);
    expect(error.message).toBe("You don't have access to these logs.");
    expect(calls).toEqual([
      `/user/alice/air/api/runs/${RUN}/logs?node=0&tail=1&limit=1`
    ]);
  });
});

describe('the Logs tab', () => {
  let page: RunPageLogs | null = null;

  afterEach(() => {
    page?.stop();
    page = null;
    window.location.hash = '';
    document.body.innerHTML = '';
  });

  async function open(
    client: RunLogsClient,
    fallbackAfterMs = 60_000
  ): Promise<RunPageLogs> {
    window.location.hash = `#/experiments/3/runs/${RUN}`;
    page = new RunPageLogs({
      baseUrl: BASE,
      client,
      fallbackAfterMs,
      panel: { waitS: 1, retryMs: 10 }
    });
    page.start();
    await page.probed;
    await settle();
    return page;
  }

  it("is added beside MLflow's tabs, with their look, and shows the logs", async () => {
    const { tabs, content } = mlflowRunPage();
    expect(findRunPageShape()?.content).toBe(content);
    const server = new FakeLogsServer(3);
    server.write([{ text: HOSTILE, level: 'error' }]);
    await open(fakeClient(server));
    const tab = document.querySelector<HTMLButtonElement>(
      '[data-jupyter-air="logs-tab"]'
    )!;
    expect(tab).not.toBeNull();
    expect(tab.parentElement).toBe(tabs[0].parentElement);
    expect(tab.className).toBe(tabs[0].className);
    expect(tab.getAttribute('role')).toBe('tab');
    expect(tab.textContent).toBe('Logs');
    expect(tab.getAttribute('data-state')).toBe('inactive');

    tab.click();
    await settle();
    const panel = document.querySelector<HTMLElement>(
      '[data-jupyter-air="logs-panel"]'
    )!;
    expect(panel.hidden).toBe(false);
    expect(content.style.display).toBe('none');
    expect(tab.getAttribute('data-state')).toBe('active');
    expect(tabs[0].getAttribute('data-state')).toBe('inactive');
    const rows = panel.querySelectorAll('.jp-air-mlf-logs-row');
    expect(rows).toHaveLength(4);
    expect(rows[0].querySelector('.jp-air-mlf-logs-node')!.textContent).toBe(
      'node 0'
    );
    expect(
      rows[3].querySelector('.jp-air-mlf-logs-level-badge')!.textContent
    ).toBe('ERROR');
    // a line is text, never HTML
    expect(rows[3].querySelector('.jp-air-mlf-logs-text')!.textContent).toBe(
      HOSTILE
    );
    expect(panel.querySelector('img')).toBeNull();

    // MLflow draws its tabs again: the Logs tab is put back, still showing the logs
    tab.remove();
    page!.sync();
    const again = document.querySelector<HTMLButtonElement>(
      '[data-jupyter-air="logs-tab"]'
    )!;
    expect(again).not.toBe(tab);
    expect(again.getAttribute('data-state')).toBe('active');
    expect(panel.hidden).toBe(false);
    expect(content.style.display).toBe('none');

    // one of MLflow's tabs gives the page back
    tabs[0].dispatchEvent(new MouseEvent('click', { bubbles: true }));
    expect(panel.hidden).toBe(true);
    expect(content.style.display).toBe('');
    expect(tabs[0].getAttribute('data-state')).toBe('active');
    expect(again.getAttribute('data-state')).toBe('inactive');
  });

  it('filters by node, level and text, and downloads what matches', async () => {
    mlflowRunPage();
    const server = new FakeLogsServer(2);
    await open(fakeClient(server));
    document
      .querySelector<HTMLButtonElement>('[data-jupyter-air="logs-tab"]')!
      .click();
    await settle();
    const panel = document.querySelector<HTMLElement>(
      '[data-jupyter-air="logs-panel"]'
    )!;
    const select = panel.querySelector<HTMLSelectElement>(
      '.jp-air-mlf-logs-node-filter'
    )!;
    expect(Array.from(select.options).map(o => o.value)).toEqual(['0', '1']);
    select.value = '1';
    select.dispatchEvent(new Event('change'));
    await settle();
    expect(server.calls[server.calls.length - 1].filters.node).toBe(1);
    const error = panel.querySelector<HTMLInputElement>('input[value="info"]')!;
    error.checked = false;
    error.dispatchEvent(new Event('change'));
    await settle();
    expect(server.calls[server.calls.length - 1].filters.levels).toEqual([
      'warning',
      'error'
    ]);
    const download = panel.querySelector<HTMLAnchorElement>(
      '.jp-air-mlf-logs-download'
    )!;
    expect(download.getAttribute('href')).toBe(
      `/user/alice/air/api/runs/${RUN}/logs/download?node=1&level=warning%2Cerror`
    );
    expect(download.hasAttribute('download')).toBe(true);
  });

  it('is not added to the page of a run without a job run', async () => {
    mlflowRunPage();
    await open(fakeClient(null));
    expect(page!.current?.probe).toBe('none');
    expect(document.querySelector('[data-jupyter-air]:not(style)')).toBeNull();
  });

  it('says "You don\'t have access to these logs" when access is refused', async () => {
    mlflowRunPage();
    const refused = new RunLogsError(
      403,
      "You don't have access to these logs. Ask for 'air-logs'."
    );
    await open(fakeClient(null, refused));
    document
      .querySelector<HTMLButtonElement>('[data-jupyter-air="logs-tab"]')!
      .click();
    const panel = document.querySelector<HTMLElement>(
      '[data-jupyter-air="logs-panel"]'
    )!;
    expect(
      panel.querySelector('.jp-air-mlf-logs-message-title')!.textContent
    ).toBe(NO_ACCESS);
    expect(panel.textContent).toContain("Ask for 'air-logs'.");
    expect(panel.querySelector('.jp-air-mlf-logs-row')).toBeNull();
  });

  it('falls back to a link to the job run in JupyterLab on a page of another shape', async () => {
    document.body.innerHTML =
      '<main><h1>a run page of another MLflow</h1></main>';
    await open(fakeClient(new FakeLogsServer(1)), 0);
    page!.sync();
    const link = document.querySelector<HTMLAnchorElement>(
      '[data-jupyter-air="logs-link"]'
    )!;
    expect(link).not.toBeNull();
    expect(link.textContent).toBe('Logs');
    expect(link.getAttribute('href')).toBe(
      '/user/alice/lab?air-workload=abc123def456'
    );
    expect(document.querySelector('[data-jupyter-air="logs-tab"]')).toBeNull();
  });

  it('leaves the page when the route shows another page', async () => {
    mlflowRunPage();
    await open(fakeClient(new FakeLogsServer(1)));
    expect(
      document.querySelector('[data-jupyter-air="logs-tab"]')
    ).not.toBeNull();
    window.location.hash = '#/experiments/3/runs';
    window.dispatchEvent(new HashChangeEvent('hashchange'));
    expect(document.querySelector('[data-jupyter-air="logs-tab"]')).toBeNull();
    expect(page!.current).toBeNull();
  });

  it('never breaks the page: an error is caught', async () => {
    mlflowRunPage();
    const warn = jest
      .spyOn(console, 'warn')
      .mockImplementation(() => undefined);
    const client = fakeClient(null, new RunLogsError(500, 'boom'));
    await open(client);
    expect(page!.current?.probe).toBe('error');
    expect(document.querySelector('[data-jupyter-air="logs-tab"]')).toBeNull();
    expect(warn).toHaveBeenCalled();
    warn.mockRestore();
  });
});

describe('following', () => {
  function scrollable(el: HTMLElement, height: number): void {
    Object.defineProperty(el, 'scrollHeight', {
      configurable: true,
      get: () => height
    });
    Object.defineProperty(el, 'clientHeight', {
      configurable: true,
      get: () => 100
    });
  }

  it('follows a running job, pauses when scrolled up, resumes on request', async () => {
    const server = new FakeLogsServer(5);
    server.status = 'RUNNING';
    const panel = await logsPanel(server, { waitS: 1, retryMs: 10 });
    document.body.append(panel.node);
    panel.show();
    await panel.loading;
    await settle();
    expect(panel.following).toBe(true);
    expect(server.waiting).toBe(1);
    const poll = server.calls[server.calls.length - 1];
    expect(poll.cursor.after).toBe('1:0:5');
    expect(poll.cursor.wait).toBe(1);

    server.write(['six']);
    await settle();
    expect(panel.lines.map(l => l.text)).toContain('six');
    expect(panel.node.querySelectorAll('.jp-air-mlf-logs-row')).toHaveLength(6);

    // scrolling up pauses following: the waiting request is dropped
    const list = panel.viewport;
    scrollable(list, 1000);
    list.scrollTop = 900;
    list.dispatchEvent(new Event('scroll'));
    list.scrollTop = 500;
    list.dispatchEvent(new Event('scroll'));
    await settle();
    expect(panel.paused).toBe(true);
    expect(panel.following).toBe(false);
    expect(server.waiting).toBe(0);
    expect(panel.node.dataset.paused).toBe('true');
    const resume = panel.node.querySelector<HTMLButtonElement>(
      '.jp-air-mlf-logs-resume'
    )!;
    expect(resume.hidden).toBe(false);
    server.write(['seven']);
    await settle();
    expect(panel.lines.map(l => l.text)).not.toContain('seven');

    resume.click();
    await settle();
    expect(panel.paused).toBe(false);
    expect(panel.lines.map(l => l.text)).toContain('seven');
    expect(resume.hidden).toBe(true);

    server.finish();
    await settle();
    expect(panel.following).toBe(false);
    panel.dispose();
  });

  it('keeps the colours of a line and marks what the search matches', async () => {
    const server = new FakeLogsServer(0);
    server.write(['\x1b[32mgreen\x1b[0m and plain']);
    const panel = await logsPanel(server);
    panel.show();
    panel.setFilters({ q: 'PLAIN' });
    await panel.loading;
    const text = panel.node.querySelector('.jp-air-mlf-logs-text')!;
    expect(text.textContent).toBe('green and plain');
    const green = text.querySelector<HTMLElement>('.jp-air-ansi-fg')!;
    expect(green.textContent).toBe('green');
    expect(green.style.getPropertyValue('--jp-air-ansi-fg')).toBe(
      'var(--jp-air-ansi-2)'
    );
    expect(text.querySelector('mark')!.textContent).toBe('plain');
    panel.dispose();
  });

  it('copies the lines that match', async () => {
    const server = new FakeLogsServer(2);
    const copied: string[] = [];
    const panel = await logsPanel(server, {
      copy: async text => {
        copied.push(text);
      }
    });
    panel.show();
    await panel.loading;
    await panel.copy();
    expect(copied).toHaveLength(1);
    expect(copied[0].split('\n')).toHaveLength(2);
    expect(copied[0]).toMatch(
      /^INFO {2}\S+ out line 0\nINFO {2}\S+ out line 1$/
    );
    panel.dispose();
  });
});
