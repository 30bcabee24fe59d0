import { Widget } from '@lumino/widgets';

import { CommandIDs } from '../commands';
import { ExperimentsModel } from '../experiments/model';
import { ExperimentsPanel } from '../experiments/panel';
import {
  HOSTILE,
  advance,
  choose,
  click,
  expectQuietWhileHidden,
  finders,
  optionLabels,
  recordingCommands
} from './helpers';
import {
  FakeRunsServer,
  T0_MS,
  mlflowDownPayload,
  run,
  runsPayload
} from './mlflow-fixtures';

describe('ExperimentsPanel', () => {
  let server: FakeRunsServer;
  let model: ExperimentsModel;
  let panel: ExperimentsPanel;
  let calls: [string, any][];

  const { q, text } = finders(() => panel.node);
  const rowIds = (container: Element = q('.jp-air-exp-runs')) =>
    Array.from(container.children).map(li => (li as HTMLElement).dataset.runId);
  const row = (id: string) => q(`.jp-air-exp-run[data-run-id="${id}"]`);

  async function open(notebook: string | null = 'a.ipynb'): Promise<void> {
    model.setNotebook(notebook);
    Widget.attach(panel, document.body);
    await advance(0);
  }

  beforeEach(() => {
    jest.useFakeTimers({ now: T0_MS });
    calls = [];
    server = new FakeRunsServer();
    model = server.model();
    panel = new ExperimentsPanel({
      model,
      commands: recordingCommands(calls)
    });
  });

  afterEach(() => {
    panel.dispose();
    model.dispose();
    jest.useRealTimers();
  });

  it('says to open a notebook when there is none', async () => {
    await open(null);
    expect(text('.jp-air-exp-message')).toBe(
      'Open a notebook to see its experiment'
    );
    expect(q('.jp-air-exp-runs').hidden).toBe(true);
    expect(server.calls).toEqual([]);
  });

  it("shows the notebook's experiment and its runs, children nested", async () => {
    server.answer = () =>
      runsPayload({
        runs: [
          run('p1', { run_name: 'sweep', status: 'RUNNING', end_time: null }),
          run('c1', { parent_run_id: 'p1', run_name: 'trial-1' }),
          run('c2', {
            parent_run_id: 'p1',
            run_name: 'trial-2',
            status: 'FAILED'
          }),
          run('r2', {
            run_name: 'baseline',
            metrics: { loss: 0.5, acc: 0.75, f1: 0.7, auc: 0.8, extra: 1 }
          })
        ]
      });
    await open();
    expect(text('.jp-air-exp-name')).toBe('/Users/ada/llm.ipynb');
    expect(text('.jp-air-exp-source')).toBe('Notebook a.ipynb');
    expect(q('.jp-air-exp-message').hidden).toBe(true);
    expect(rowIds()).toEqual(['p1', 'r2']);
    expect(
      rowIds(row('p1').querySelector('.jp-air-exp-run-children')!)
    ).toEqual(['c1', 'c2']);
    expect(
      row('r2')
        .querySelector('.jp-air-exp-run-children')!
        .hasAttribute('hidden')
    ).toBe(true);

    const p1 = row('p1');
    expect(p1.querySelector('.jp-air-exp-run-name')!.textContent).toBe('sweep');
    expect(p1.querySelector('.jp-air-exp-run-status')!.textContent).toBe(
      'Running'
    );
    expect(p1.querySelector('.jp-air-exp-run-status')!.classList).toContain(
      'jp-air-status-running'
    );
    expect(p1.querySelector('.jp-air-exp-run-start')!.textContent).toMatch(
      /^\d\d:\d\d$/
    );
    expect(p1.querySelector('.jp-air-exp-run-duration')!.textContent).toBe(
      '2 min 0 s'
    );
    expect(p1.querySelector('.jp-air-exp-run-name')!.getAttribute('href')).toBe(
      '/user/alice/air/mlflow/#/experiments/1/runs/p1'
    );
    expect(row('c2').querySelector('.jp-air-exp-run-status')!.textContent).toBe(
      'Failed'
    );
    expect(
      row('c1').querySelector('.jp-air-exp-run-duration')!.textContent
    ).toBe('1 min 0 s');

    const metrics = Array.from(
      row('r2').querySelectorAll('.jp-air-exp-metric')
    ).map(m => m.textContent);
    expect(metrics).toEqual(['loss0.5', 'acc0.75', 'f10.7', 'auc0.8']);
    expect(
      row('c1').querySelector('.jp-air-exp-metric-value')!.textContent
    ).toBe('0.1235');

    // the running duration ticks
    await advance(3000);
    expect(p1.querySelector('.jp-air-exp-run-duration')!.textContent).toBe(
      '2 min 3 s'
    );
  });

  it('opens a run in the MLflow tab on click', async () => {
    await open();
    row('r1').querySelector<HTMLElement>('.jp-air-exp-run-row')!.click();
    expect(calls).toEqual([
      [CommandIDs.openMlflow, { path: '#/experiments/1/runs/r1' }]
    ]);
    expect(row('r1').classList).toContain('jp-mod-highlighted');
    // the name is a real link: a plain click opens the tab too (once), ctrl-click is the browser's
    const name = row('r1').querySelector<HTMLAnchorElement>(
      '.jp-air-exp-run-name'
    )!;
    expect(click(name)).toBe(true);
    expect(calls).toHaveLength(2);
    expect(click(name, { ctrlKey: true })).toBe(false);
    expect(calls).toHaveLength(2);
    // keyboard
    row('r1')
      .querySelector('.jp-air-exp-run-row')!
      .dispatchEvent(
        new KeyboardEvent('keydown', { key: 'Enter', bubbles: true })
      );
    expect(calls).toHaveLength(3);
  });

  it('switches notebooks', async () => {
    await open('a.ipynb');
    expect(text('.jp-air-exp-name')).toBe('/Users/ada/a.ipynb');
    model.setNotebook('dir/b.ipynb');
    expect(text('.jp-air-exp-message')).toBe('Loading runs…');
    await advance(0);
    expect(text('.jp-air-exp-name')).toBe('/Users/ada/dir/b.ipynb');
    expect(text('.jp-air-exp-source')).toBe('Notebook b.ipynb');
    expect(q('.jp-air-exp-source').title).toBe('dir/b.ipynb');
    expect(server.calls.map(c => c.notebook)).toEqual([
      'a.ipynb',
      'dir/b.ipynb'
    ]);
  });

  it('filters by status', async () => {
    server.answer = () =>
      runsPayload({
        runs: [
          run('r1', { status: 'RUNNING', end_time: null }),
          run('r2', { status: 'FINISHED' }),
          run('r3', { status: 'KILLED' })
        ]
      });
    await open();
    const filter = q<HTMLSelectElement>('.jp-air-exp-filter');
    expect(optionLabels(filter)).toEqual([
      'All',
      'Running',
      'Finished',
      'Failed',
      'Killed'
    ]);
    filter.value = 'KILLED';
    filter.dispatchEvent(new Event('change'));
    expect(rowIds()).toEqual(['r3']);
    await advance(0);
    expect(server.calls[1].status).toBe('KILLED');
    await choose(filter, 'FAILED');
    expect(text('.jp-air-exp-message')).toBe(
      'No failed runs in /Users/ada/llm.ipynb'
    );
  });

  it('shows the starting, unreachable and no-runs states', async () => {
    server.answer = () =>
      mlflowDownPayload({ state: 'starting', elapsed_s: 12.4 });
    await open();
    expect(text('.jp-air-exp-message')).toBe('MLflow is starting (12 s)…');

    server.answer = () =>
      mlflowDownPayload({
        state: 'failed',
        tracking_uri: 'http://127.0.0.1:5123',
        error: 'Connection refused'
      });
    await advance(2000);
    expect(text('.jp-air-exp-message')).toBe(
      'MLflow unreachable at http://127.0.0.1:5123: Connection refused'
    );
    expect(q('.jp-air-exp-message').dataset.state).toBe('unreachable');

    server.answer = () =>
      runsPayload({
        experiment: null,
        experiment_name: '/Users/ada/new.ipynb',
        runs: []
      });
    await model.refresh();
    expect(text('.jp-air-exp-message')).toBe(
      'No runs yet in /Users/ada/new.ipynb'
    );
  });

  it('keeps the runs and says so when a refresh fails', async () => {
    await open();
    server.answer = () =>
      new Error('Cannot reach the Jupyter server: Failed to fetch');
    await model.refresh();
    expect(rowIds()).toEqual(['r1']);
    expect(q('.jp-air-exp-error').hidden).toBe(false);
    expect(text('.jp-air-exp-error')).toContain('Failed to fetch');
  });

  it('switches to another experiment and back', async () => {
    await open();
    const picker = q<HTMLSelectElement>('.jp-air-exp-select');
    expect(optionLabels(picker)).toEqual([
      "This notebook's experiment",
      '/Users/ada/llm.ipynb',
      'baseline'
    ]);
    expect(q('.jp-air-exp-back').hidden).toBe(true);
    await choose(picker, '2');
    expect(server.calls[1]).toEqual({ experiment_id: '2', limit: 100 });
    expect(text('.jp-air-exp-name')).toBe('exp-2');
    expect(text('.jp-air-exp-source')).toBe('Picked experiment');
    expect(q('.jp-air-exp-back').hidden).toBe(false);
    q('.jp-air-exp-back').click();
    await advance(0);
    expect(server.calls[2]).toEqual({ notebook: 'a.ipynb', limit: 100 });
    expect(picker.value).toBe('');
    expect(q('.jp-air-exp-back').hidden).toBe(true);
  });

  it('opens the experiment in MLflow', async () => {
    await open();
    q('.jp-air-exp-open-mlflow').click();
    expect(calls).toEqual([
      [CommandIDs.openMlflow, { path: '#/experiments/1/runs' }]
    ]);
  });

  it('highlights and scrolls to a run opened from a run display', async () => {
    const scrolled: string[] = [];
    const original = (Element.prototype as any).scrollIntoView;
    (Element.prototype as any).scrollIntoView = function (this: HTMLElement) {
      scrolled.push(
        this.closest<HTMLElement>('.jp-air-exp-run')!.dataset.runId!
      );
    };
    try {
      server.answer = () =>
        runsPayload({ runs: [run('r1'), run('r2'), run('r3')] });
      await open();
      model.focusRun({ experiment_id: '1', run_id: 'r3' });
      await advance(0);
      expect(row('r3').classList).toContain('jp-mod-highlighted');
      expect(row('r1').classList).not.toContain('jp-mod-highlighted');
      expect(scrolled).toEqual(['r3']);
      await model.refresh();
      expect(scrolled).toEqual(['r3']); // once, not on every poll
    } finally {
      (Element.prototype as any).scrollIntoView = original;
    }
  });

  it('shows hostile names as text', async () => {
    server.answer = () =>
      runsPayload({
        experiment: { experiment_id: '1', name: HOSTILE },
        experiment_name: HOSTILE,
        runs: [run('r1', { run_name: HOSTILE, metrics: { [HOSTILE]: 1 } })]
      });
    server.experiments = [
      { experiment_id: '3', name: HOSTILE, last_update_time: null }
    ];
    await open();
    expect(text('.jp-air-exp-name')).toBe(HOSTILE);
    expect(row('r1').querySelector('.jp-air-exp-run-name')!.textContent).toBe(
      HOSTILE
    );
    expect(
      row('r1').querySelector('.jp-air-exp-metric-name')!.textContent
    ).toBe(HOSTILE);
    expect(panel.node.querySelector('img')).toBeNull();
  });

  it('reuses rows across polls and drops rows of runs gone', async () => {
    let runs = [run('r1'), run('r2')];
    server.answer = () => runsPayload({ runs });
    await open();
    const r1 = row('r1');
    runs = [run('r3'), run('r1', { status: 'FAILED' })];
    await model.refresh();
    expect(rowIds()).toEqual(['r3', 'r1']);
    expect(row('r1')).toBe(r1);
    expect(r1.querySelector('.jp-air-exp-run-status')!.textContent).toBe(
      'Failed'
    );
    expect(panel.rowOf('r2')).toBeNull();
  });

  it('polls only while shown', async () => {
    await open();
    expect(server.calls).toHaveLength(1);
    await expectQuietWhileHidden(panel, () => server.calls.length, 120_000);
    await advance(30_000);
    expect(server.calls).toHaveLength(3);
  });

  it('says when the truncated list shows only the latest runs', async () => {
    server.answer = () =>
      runsPayload({ runs: [run('r1'), run('r2')], truncated: true });
    await open();
    expect(q('.jp-air-exp-truncated').hidden).toBe(false);
    expect(text('.jp-air-exp-truncated')).toBe('Showing the latest 2 runs');
  });
});
