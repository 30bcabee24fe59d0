import {
  MimeModel,
  RenderMimeRegistry,
  standardRendererFactories
} from '@jupyterlab/rendermime';
import { Widget } from '@lumino/widgets';

import { CommandIDs } from '../commands';
import { RunRenderer, createRunRendererFactory } from '../mlflow/run-renderer';
import { IRunDisplay, RUN_MIME_TYPE } from '../mlflow/types';
import { HOSTILE, advance, click, finders } from './helpers';
import { T0_MS, runDisplay } from './mlflow-fixtures';

function model(
  data: Partial<IRunDisplay> | Record<string, unknown>
): MimeModel {
  return new MimeModel({ data: { [RUN_MIME_TYPE]: data as any } });
}

describe('RunRenderer', () => {
  let calls: [string, any][];
  let renderer: RunRenderer;
  // what the server says of a run (GET air/api/runs/<id>), and what it was asked
  let serverState: () => Promise<{
    status: string;
    end_time: number | null;
  } | null>;
  let asked: string[];
  const commands = {
    execute: async (id: string, args?: any) => {
      calls.push([id, args]);
    }
  };
  const { q, text } = finders(() => renderer.node);

  async function render(data: Partial<IRunDisplay> | Record<string, unknown>) {
    await renderer.renderModel(model(data));
  }

  beforeEach(() => {
    jest.useFakeTimers({ now: T0_MS });
    calls = [];
    asked = [];
    serverState = async () => ({ status: 'RUNNING', end_time: null });
    renderer = new RunRenderer({
      commands,
      fetchRunState: id => {
        asked.push(id);
        return serverState();
      }
    });
    Widget.attach(renderer, document.body);
  });

  afterEach(() => {
    renderer.dispose();
    jest.useRealTimers();
  });

  it('shows a running run with a ticking duration', async () => {
    await render(runDisplay());
    expect(renderer.hasClass('jp-air-run')).toBe(true);
    expect(text('.jp-air-run-name')).toBe('bright-fox-42');
    expect(text('.jp-air-run-status')).toBe('Running');
    expect(q('.jp-air-run-status').classList).toContain(
      'jp-air-status-running'
    );
    expect(text('.jp-air-run-experiment-name')).toBe('/Users/ada/llm.ipynb');
    expect(text('.jp-air-run-duration')).toBe('1 min 5 s');
    await advance(3000);
    expect(text('.jp-air-run-duration')).toBe('1 min 8 s');
    await advance(60_000);
    expect(text('.jp-air-run-duration')).toBe('2 min 8 s');
    expect(q('.jp-air-run-nested').hidden).toBe(true);
    expect(q('.jp-air-run-resumed').hidden).toBe(true);
    expect(q('.jp-air-run-no-ui').hidden).toBe(true);
  });

  it.each([
    ['FINISHED', 'Finished', 'jp-air-status-finished'],
    ['FAILED', 'Failed', 'jp-air-status-failed'],
    ['KILLED', 'Killed', 'jp-air-status-killed']
  ])('shows a %s run with its final duration', async (status, label, cls) => {
    await render(runDisplay({ status, end_time: T0_MS - 5_000 }));
    expect(text('.jp-air-run-status')).toBe(label);
    expect(q('.jp-air-run-status').classList).toContain(cls);
    expect(renderer.node.dataset.status).toBe(status);
    expect(text('.jp-air-run-duration')).toBe('1 min 0 s');
    jest.advanceTimersByTime(10_000);
    expect(text('.jp-air-run-duration')).toBe('1 min 0 s');
    expect(jest.getTimerCount()).toBe(0);
  });

  it('shows the nested and resumed markers', async () => {
    await render(
      runDisplay({
        parent_run_id: 'fedcba9876543210fedcba9876543210',
        resumed: true
      })
    );
    expect(q('.jp-air-run-nested').hidden).toBe(false);
    expect(text('.jp-air-run-nested')).toBe('nested in fedcba98');
    expect(q('.jp-air-run-nested').title).toContain(
      'fedcba9876543210fedcba9876543210'
    );
    expect(q('.jp-air-run-resumed').hidden).toBe(false);
    expect(text('.jp-air-run-resumed')).toBe('resumed');
  });

  it('builds hrefs from ui and the fragments', async () => {
    await render(runDisplay());
    const id = 'abc123def4567890abc123def4567890';
    expect(
      q<HTMLAnchorElement>('.jp-air-run-link-run').getAttribute('href')
    ).toBe(`/user/alice/air/mlflow/#/experiments/7/runs/${id}`);
    expect(q('.jp-air-run-link-metrics').getAttribute('href')).toBe(
      `/user/alice/air/mlflow/#/experiments/7/runs/${id}/system-metrics`
    );
    expect(q('.jp-air-run-link-experiment').getAttribute('href')).toBe(
      '/user/alice/air/mlflow/#/experiments/7/runs'
    );
    expect(q<HTMLAnchorElement>('.jp-air-run-link-run').target).toBe('_blank');

    await render(runDisplay({ ui: 'https://mlflow.example.com/' }));
    expect(q('.jp-air-run-link-run').getAttribute('href')).toBe(
      `https://mlflow.example.com/#/experiments/7/runs/${id}`
    );
  });

  it('never links to a javascript: ui or a non-fragment link', async () => {
    await render(
      runDisplay({
        links: {
          run: '#/experiments/7/runs/x',
          system_metrics: 'javascript:alert(1)',
          experiment: null
        }
      })
    );
    expect(q('.jp-air-run-link-run').getAttribute('href')).toBe(
      '/user/alice/air/mlflow/#/experiments/7/runs/x'
    );
    expect(q('.jp-air-run-link-metrics').hidden).toBe(true);
    expect(q('.jp-air-run-link-metrics').hasAttribute('href')).toBe(false);
    expect(q('.jp-air-run-link-experiment').hidden).toBe(true);

    await render(runDisplay({ ui: 'javascript:alert(1)//' }));
    expect(renderer.node.querySelectorAll('a[href]')).toHaveLength(0);
    expect(q('.jp-air-run-no-ui').hidden).toBe(false);
  });

  it('says why there are no links when the run has no UI', async () => {
    await render(
      runDisplay({
        ui: null,
        no_ui_reason: 'the tracking store sqlite:///x.db has no web UI'
      })
    );
    expect(q('.jp-air-run-link-run').hidden).toBe(true);
    expect(q('.jp-air-run-link-metrics').hidden).toBe(true);
    expect(q('.jp-air-run-link-experiment').hidden).toBe(true);
    expect(text('.jp-air-run-no-ui')).toBe(
      'No MLflow UI link: the tracking store sqlite:///x.db has no web UI'
    );
    // the Experiment panel still knows the run
    expect(q('.jp-air-run-open-panel').hidden).toBe(false);
    expect(text('.jp-air-run-status')).toBe('Running');
  });

  it('runs the commands with the right args', async () => {
    await render(runDisplay());
    const id = 'abc123def4567890abc123def4567890';
    q('.jp-air-run-link-run').click();
    q('.jp-air-run-link-metrics').click();
    q('.jp-air-run-link-experiment').click();
    q('.jp-air-run-open-panel').click();
    expect(calls).toEqual([
      [CommandIDs.openMlflow, { path: `#/experiments/7/runs/${id}` }],
      [
        CommandIDs.openMlflow,
        { path: `#/experiments/7/runs/${id}/system-metrics` }
      ],
      [CommandIDs.openMlflow, { path: '#/experiments/7/runs' }],
      [CommandIDs.openExperiments, { experiment_id: '7', run_id: id }]
    ]);
  });

  it('leaves modifier clicks to the browser (new tab)', async () => {
    await render(runDisplay());
    const link = q('.jp-air-run-link-run');
    expect(click(link, { ctrlKey: true })).toBe(false);
    expect(calls).toEqual([]);
    expect(click(link)).toBe(true);
    expect(calls).toHaveLength(1);
  });

  it('shows hostile names as text', async () => {
    await render(
      runDisplay({
        run_name: HOSTILE,
        experiment_name: HOSTILE,
        parent_run_id: HOSTILE
      })
    );
    expect(text('.jp-air-run-name')).toBe(HOSTILE);
    expect(text('.jp-air-run-experiment-name')).toBe(HOSTILE);
    expect(text('.jp-air-run-nested')).toContain('<img');
    expect(renderer.node.querySelector('img')).toBeNull();
  });

  it('re-renders in place on updated data and stops ticking when the run ends', async () => {
    await render(runDisplay());
    const name = q('.jp-air-run-name');
    expect(jest.getTimerCount()).toBe(2); // the clock, and the check with the server
    await render(runDisplay({ status: 'FINISHED', end_time: T0_MS + 15_000 }));
    expect(q('.jp-air-run-name')).toBe(name);
    expect(text('.jp-air-run-status')).toBe('Finished');
    expect(text('.jp-air-run-duration')).toBe('1 min 20 s');
    expect(jest.getTimerCount()).toBe(0);
    expect(renderer.node.querySelectorAll('.jp-air-run-status')).toHaveLength(
      1
    );
  });

  it('stops ticking when detached or disposed', async () => {
    await render(runDisplay());
    expect(jest.getTimerCount()).toBe(2); // the clock, and the check with the server
    Widget.detach(renderer);
    expect(jest.getTimerCount()).toBe(0);
    Widget.attach(renderer, document.body);
    await advance(0); // the polls arm their timers (a microtask after they start)
    expect(jest.getTimerCount()).toBe(2);
    renderer.dispose();
    expect(jest.getTimerCount()).toBe(0);
  });

  describe('a card that says RUNNING checks with the server', () => {
    it('shows how a run ended when the kernel never said (a reopened notebook)', async () => {
      await render(runDisplay());
      serverState = async () => ({
        status: 'KILLED',
        end_time: T0_MS - 5_000
      });
      await advance(1999);
      expect(asked).toEqual([]);
      await advance(1);
      expect(asked).toEqual([runDisplay().run_id]);
      expect(text('.jp-air-run-status')).toBe('Killed');
      expect(renderer.node.dataset.status).toBe('KILLED');
      expect(text('.jp-air-run-duration')).toBe('1 min 0 s');
      await advance(60_000);
      expect(asked).toHaveLength(1);
      expect(text('.jp-air-run-duration')).toBe('1 min 0 s');
      expect(jest.getTimerCount()).toBe(0);
    });

    it('asks every 20 s while it runs, never while off the page', async () => {
      await render(runDisplay());
      await advance(2000);
      await advance(20_000);
      expect(asked).toHaveLength(2);
      expect(text('.jp-air-run-status')).toBe('Running');
      Widget.detach(renderer);
      await advance(60_000);
      expect(asked).toHaveLength(2);
      Widget.attach(renderer, document.body);
      await advance(2000);
      expect(asked).toHaveLength(3);
    });

    it('keeps asking after a failure, stops for a run the server does not know', async () => {
      await render(runDisplay());
      serverState = async () => {
        throw new Error('MLflow is starting');
      };
      await advance(2000);
      expect(text('.jp-air-run-status')).toBe('Running');
      serverState = async () => null;
      await advance(20_000);
      expect(asked).toHaveLength(2);
      await advance(100_000);
      expect(asked).toHaveLength(2);
      // the clock still ticks: the kernel may still update the card
      expect(text('.jp-air-run-status')).toBe('Running');
    });

    it('lets the kernel win over an answer that comes after its update', async () => {
      let answer: (state: { status: string; end_time: number }) => void = () =>
        undefined;
      serverState = () => new Promise(resolve => (answer = resolve));
      await render(runDisplay());
      await advance(2000);
      await render(runDisplay({ status: 'FINISHED', end_time: T0_MS }));
      answer({ status: 'FAILED', end_time: T0_MS - 5_000 });
      await advance(0);
      expect(text('.jp-air-run-status')).toBe('Finished');
    });

    it('never asks about a run that ended', async () => {
      await render(runDisplay({ status: 'FINISHED', end_time: T0_MS }));
      await advance(60_000);
      expect(asked).toEqual([]);
    });
  });

  it('survives malformed data', async () => {
    await render({
      run_name: 42,
      status: null,
      links: 'nope',
      start_time: 'x'
    });
    expect(text('.jp-air-run-name')).toBe('42');
    expect(text('.jp-air-run-status')).toBe('Unknown');
    expect(q('.jp-air-run-duration').hidden).toBe(true);
    expect(q('.jp-air-run-link-run').hidden).toBe(true);
    expect(jest.getTimerCount()).toBe(0);
  });
});

describe('createRunRendererFactory', () => {
  it('is preferred over text/html, also in untrusted outputs', () => {
    const registry = new RenderMimeRegistry({
      initialFactories: standardRendererFactories
    });
    const factory = createRunRendererFactory({
      execute: async () => undefined
    });
    registry.addFactory(factory, 10);
    const bundle = {
      [RUN_MIME_TYPE]: {},
      'text/html': '<a href="#">run</a>',
      'text/plain': 'run'
    };
    expect(registry.preferredMimeType(bundle, 'ensure')).toBe(RUN_MIME_TYPE);
    expect(registry.preferredMimeType(bundle, 'any')).toBe(RUN_MIME_TYPE);
    const renderer = registry.createRenderer(RUN_MIME_TYPE);
    expect(renderer).toBeInstanceOf(RunRenderer);
    renderer.dispose();
  });
});
