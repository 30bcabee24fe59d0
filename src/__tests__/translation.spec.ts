/**
 * Every string a view shows goes through the translator: each view is rendered with a translator
 * that marks what it translates (⟦…⟧), and every text and tooltip with a letter in it must be
 * marked, unless it is data from the server (a name, a command, an id).
 */
import { MimeModel } from '@jupyterlab/rendermime';
import {
  ITranslator,
  TranslationBundle,
  nullTranslator
} from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { TRANSLATION_DOMAIN } from '../common/translation';
import { ExperimentsModel } from '../experiments/model';
import { ExperimentsPanel } from '../experiments/panel';
import { GpuPanel } from '../gpu/panel';
import { GpuModel } from '../gpu/model';
import { LogsModel } from '../logs/model';
import { LogsView } from '../logs/view';
import { RunRenderer } from '../mlflow/run-renderer';
import { MlflowStatusStore } from '../mlflow/status';
import { RUN_MIME_TYPE } from '../mlflow/types';
import { MlflowView } from '../mlflow/ui-view';
import { JobModel } from '../workloads/job-model';
import { WorkloadsModel } from '../workloads/model';
import { WorkloadsPanel } from '../workloads/panel';
import {
  FakeRenderer,
  FakeServer,
  T0,
  health,
  nodeSummary,
  processInfo,
  reading,
  sample
} from './fixtures';
import { advance } from './helpers';
import {
  FakeRunsServer,
  T0_MS,
  run,
  runDisplay,
  runsPayload,
  status
} from './mlflow-fixtures';
import {
  FakeLogsServer,
  attempt,
  job,
  loose,
  queuedJob,
  runningJob
} from './workloads-fixtures';

/** A bundle that marks every string it translates: each of its methods, marking the result. */
function markingBundle(): TranslationBundle {
  const trans = nullTranslator.load(TRANSLATION_DOMAIN) as any;
  const methods = Object.getOwnPropertyNames(Object.getPrototypeOf(trans));
  return Object.fromEntries(
    methods
      .filter(name => name !== 'constructor')
      .map(name => [name, (...args: any[]) => `⟦${trans[name](...args)}⟧`])
  ) as unknown as TranslationBundle;
}

const domains: string[] = [];
const translator: ITranslator = {
  languageCode: 'xx',
  load: (domain: string) => {
    domains.push(domain);
    return markingBundle();
  }
};

/**
 * Every string in an answer of the server (what a view may show as it came): values, keys (metric
 * names), and times as the browser writes dates in the user's locale.
 */
function collect(value: unknown, into: Set<string>): Set<string> {
  if (typeof value === 'string') {
    into.add(value);
  } else if (typeof value === 'number' && value > 1e9) {
    into.add(new Date(value < 1e11 ? value * 1000 : value).toLocaleString());
  } else if (Array.isArray(value)) {
    value.forEach(v => collect(v, into));
  } else if (value && typeof value === 'object') {
    Object.entries(value).forEach(([k, v]) => {
      into.add(k);
      collect(v, into);
    });
  }
  return into;
}

/** Record every answer's strings on the way. */
function recording<A extends any[], T>(
  data: Set<string>,
  fetch: (...args: A) => Promise<T>
): (...args: A) => Promise<T> {
  return async (...args: A) => {
    const answer = await fetch(...args);
    collect(answer, data);
    return answer;
  };
}

/**
 * Texts and tooltips of `root` with a letter, neither translated nor data (a piece of data joined
 * to another, `name\nuuid` or `loss = 0.5`, is data too).
 */
function untranslated(root: HTMLElement, data: Set<string>): string[] {
  const isData = (text: string) => Array.from(data).some(d => d.includes(text));
  const found: string[] = [];
  const check = (text: string | null) => {
    const value = (text ?? '').trim();
    if (!/\p{L}/u.test(value) || value.includes('⟦')) {
      return;
    }
    const pieces = value.split(/\n| · | = /).map(piece => piece.trim());
    if (!pieces.every(piece => !/\p{L}/u.test(piece) || isData(piece))) {
      found.push(value);
    }
  };
  const elements = [root, ...Array.from(root.querySelectorAll('*'))];
  for (const el of elements) {
    for (const attr of ['title', 'aria-label', 'placeholder']) {
      check(el.getAttribute(attr));
    }
    for (const child of Array.from(el.childNodes)) {
      if (child.nodeType === Node.TEXT_NODE) {
        check(child.textContent);
      }
    }
  }
  return found;
}

describe('every visible string goes through the translator', () => {
  let data: Set<string>;
  let widget: Widget | null;

  async function show(w: Widget): Promise<HTMLElement> {
    widget = w;
    Widget.attach(w, document.body);
    await advance(0);
    await advance(0);
    return w.node;
  }

  /** The GPU panel on `server` at T0, with the translator; its answers' strings are data. */
  async function showGpuPanel(
    server: FakeServer,
    options: Pick<GpuPanel.IOptions, 'openPath' | 'linker'>
  ): Promise<{ model: GpuModel; node: HTMLElement }> {
    jest.setSystemTime(T0 * 1000);
    const model = new GpuModel({
      fetch: recording(data, server.fetch),
      fetchOverview: recording(data, server.overview)
    });
    const node = await show(
      new GpuPanel({
        ...options,
        model,
        translator,
        renderer: new FakeRenderer(),
        scheduleFrame: callback => callback()
      })
    );
    return { model, node };
  }

  beforeEach(() => {
    jest.useFakeTimers({ now: T0_MS });
    data = new Set();
    widget = null;
  });

  afterEach(() => {
    widget?.dispose();
    jest.useRealTimers();
  });

  it('in the GPU panel', async () => {
    const server = new FakeServer({ held_by: ['a-notebook'] }, t =>
      sample(t, [
        reading(0, {
          processes: [
            processInfo({
              kernel: {
                kernel_id: 'k1',
                kernel_name: 'python3',
                path: 'work/train.ipynb'
              }
            }),
            processInfo({ pid: 4242, kernel: null })
          ]
        }),
        reading(1, { lost: true })
      ])
    );
    const { model, node } = await showGpuPanel(server, {
      openPath: () => undefined
    });
    expect(node.querySelector('.jp-air-gpu-card')).not.toBeNull();
    expect(untranslated(node, data)).toEqual([]);
    model.dispose();
  });

  it('in the GPU panel across nodes: overview, health, runs', async () => {
    const server = new FakeServer({}, t =>
      sample(t, [
        reading(0, {
          health: health({
            throttle_reasons: ['hw_thermal_slowdown'],
            xid_count: 1,
            xid_errors: [{ t: T0, xid: 79 }],
            ecc_uncorrected: 2,
            flags: ['xid', 'ecc_uncorrected', 'thermal_throttling']
          }),
          mig: [{ index: 0, uuid: 'MIG-a', mem_used_mb: 1, mem_total_mb: 2 }],
          processes: [
            processInfo({
              run: {
                run_id: '4f2c9e8a1b7d4e3f',
                experiment_id: '7',
                rank: 1,
                local_rank: 1,
                node_rank: 0,
                job_id: '0123456789ab'
              }
            })
          ]
        })
      ])
    );
    server.agents = [
      nodeSummary('gpu-b', { state: 'stale' }),
      nodeSummary('gpu-c', { state: 'lost', backend: 'none', reason: null })
    ];
    server.agents[0].gpus[1].health = health({
      flags: ['hw_slowdown', 'row_remap_failure']
    });
    server.nodeMeta['gpu-b'] = { state: 'stale' };
    const { model, node } = await showGpuPanel(server, {
      linker: {
        mlflowUi: () => '/air/mlflow/',
        baseUrl: () => '/',
        commands: { execute: async () => undefined }
      }
    });
    expect(node.querySelector('.jp-air-gpu-ov-node')).not.toBeNull();
    expect(untranslated(node, data)).toEqual([]);
    model.setNode('gpu-b');
    await advance(0);
    expect(
      node.querySelector<HTMLElement>('.jp-air-gpu-nodestate')!.hidden
    ).toBe(false);
    expect(untranslated(node, data)).toEqual([]);
    model.setNode(server.node);
    await advance(0);
    expect(node.querySelector('.jp-air-gpu-run-link')).not.toBeNull();
    expect(untranslated(node, data)).toEqual([]);
    model.dispose();
  });

  it('in the Experiment panel', async () => {
    const server = new FakeRunsServer();
    server.answer = () =>
      runsPayload({
        runs: [
          run('p1', { status: 'RUNNING', end_time: null }),
          run('c1', { parent_run_id: 'p1', job_id: '3f2a9c1b0d4e' })
        ]
      });
    const model = new ExperimentsModel({
      fetchRuns: recording(data, server.fetchRuns),
      fetchExperiments: recording(data, server.fetchExperiments)
    });
    model.setNotebook('a.ipynb');
    collect('a.ipynb', data);
    const node = await show(
      new ExperimentsPanel({
        model,
        translator,
        commands: { execute: async () => undefined }
      })
    );
    expect(node.querySelectorAll('.jp-air-exp-run')).toHaveLength(2);
    expect(untranslated(node, data)).toEqual([]);
    model.dispose();
  });

  it('in the Workloads panel: the list and a job run page', async () => {
    const jobs = [
      runningJob('aaaa00000001', {
        attempts: [attempt(1, { status: 'FAILED', exit_code: 3 })]
      }),
      job('aaaa00000000', { max_retries: 2, timeout_minutes: 30 }),
      queuedJob('aaaa0000000f')
    ];
    const model = new WorkloadsModel({
      fetchWorkloads: recording(data, async query => ({
        workloads: jobs,
        total: 120,
        limit: query.limit,
        offset: 0
      }))
    });
    const jobModel = new JobModel({
      fetchJob: recording(data, async id => jobs.find(j => j.id === id)!)
    });
    const panel = new WorkloadsPanel({
      model,
      jobModel,
      translator,
      commands: { execute: async () => undefined }
    });
    const node = await show(panel);
    expect(node.querySelectorAll('.jp-air-wl-job')).toHaveLength(3);
    expect(untranslated(node, data)).toEqual([]);
    panel.openJob('aaaa00000001');
    await advance(0);
    expect(node.querySelector('.jp-air-wl-attempt')).not.toBeNull();
    expect(untranslated(node, data)).toEqual([]);
    panel.openJob('aaaa0000000f');
    await advance(0);
    expect(node.querySelector('.jp-air-wl-facts')!.textContent).toContain(
      'Queue'
    );
    expect(untranslated(node, data)).toEqual([]);
    model.dispose();
    jobModel.dispose();
  });

  it('in the Logs view, its lines and its states', async () => {
    const server = new FakeLogsServer(3);
    server.status = 'RUNNING';
    server.write([{ text: 'oops', stream: 'stderr', level: 'error' }]);
    const model = new LogsModel({
      jobId: 'abc123def456',
      fetchLogs: recording(data, server.fetchLogs),
      fetchJob: recording(data, async () =>
        runningJob('abc123def456', { compute: loose({ num_nodes: 2 }) })
      )
    });
    collect('abc123def456', data);
    const node = await show(
      new LogsView({ model, translator, copyText: async () => undefined })
    );
    expect(node.querySelectorAll('.jp-air-logs-row').length).toBeGreaterThan(0);
    expect(untranslated(node, data)).toEqual([]);
    model.pause();
    model.setFilters({ q: 'nothing matches this' });
    await advance(0);
    expect(node.dataset.state).toBe('empty');
    expect(untranslated(node, data)).toEqual([]);
    model.dispose();
  });

  it('in a run display', async () => {
    const renderer = new RunRenderer({
      translator,
      commands: { execute: async () => undefined },
      fetchRunState: async () => ({ status: 'RUNNING', end_time: null })
    });
    const display = runDisplay({
      parent_run_id: 'fedcba9876543210fedcba9876543210',
      resumed: true,
      job_id: '3f2a9c1b0d4e',
      attempt: 2
    });
    collect(display, data);
    await renderer.renderModel(
      new MimeModel({ data: { [RUN_MIME_TYPE]: display as any } })
    );
    const node = await show(renderer);
    expect(untranslated(node, data)).toEqual([]);
    const noUi = runDisplay({ ui: null, no_ui_reason: null });
    await renderer.renderModel(
      new MimeModel({ data: { [RUN_MIME_TYPE]: noUi as any } })
    );
    expect(untranslated(node, data)).toEqual([]);
  });

  it('in the MLflow tab', async () => {
    const answer = status({
      state: 'starting',
      elapsed_s: 4,
      restarts: 2,
      error: 'port in use'
    });
    collect(answer, data);
    const view = new MlflowView({
      store: new MlflowStatusStore({ fetch: async () => answer }),
      translator
    });
    const node = await show(view);
    expect(view.state).toBe('starting');
    expect(untranslated(node, data)).toEqual([]);
    expect(domains.every(d => d === 'jupyter_air')).toBe(true);
  });
});
