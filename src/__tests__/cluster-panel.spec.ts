import { Widget } from '@lumino/widgets';

import { CommandIDs } from '../commands';
import { GpuModel } from '../gpu/model';
import { GpuPanel } from '../gpu/panel';
import { IRunLinker } from '../gpu/run-links';
import {
  FakeRenderer,
  FakeServer,
  INodeRow,
  T0,
  health,
  nodeSummary,
  processInfo,
  reading,
  sample
} from './fixtures';
import {
  HOSTILE,
  advance,
  choose,
  click,
  finders,
  optionLabels,
  shown
} from './helpers';

/** An agent node's overview row whose GPU 1 has a health flag. */
function flaggedNode(name: string): INodeRow {
  const node = nodeSummary(name);
  node.gpus[1].health = health({
    xid_count: 2,
    xid_errors: [
      { t: T0 - 100, xid: 13 },
      { t: T0 - 60, xid: 79 }
    ],
    flags: ['xid']
  });
  return node;
}

describe('GpuPanel across nodes', () => {
  let server: FakeServer;
  let renderer: FakeRenderer;
  let model: GpuModel;
  let panel: GpuPanel;
  let executed: { id: string; args: unknown }[];

  const { q, all } = finders(() => panel.node);
  const nodeBody = (name: string) =>
    q(`.jp-air-gpu-ov-node[data-node="${name}"]`);
  const shownNodes = () =>
    all('.jp-air-gpu-ov-node')
      .filter(el => shown(el))
      .map(el => el.dataset.node);

  const linker: IRunLinker = {
    mlflowUi: () => '/user/ada/air/mlflow/',
    baseUrl: () => '/user/ada/',
    commands: {
      execute: async (id, args) => {
        executed.push({ id, args });
      }
    }
  };

  /** Open a panel on a fake server with these agent nodes and let its first poll answer. */
  async function open(
    agents: INodeRow[],
    configure: (s: FakeServer) => void = () => undefined
  ): Promise<void> {
    server = new FakeServer();
    server.agents = agents;
    configure(server);
    renderer = new FakeRenderer();
    model = new GpuModel(server.options);
    executed = [];
    await attach({ renderer, linker, scheduleFrame: callback => callback() });
  }

  /** A panel on `model` (and `options`) on the page, once its first answers are in. */
  async function attach(
    options: Omit<GpuPanel.IOptions, 'model'> = {}
  ): Promise<void> {
    panel = new GpuPanel({ model, ...options });
    Widget.attach(panel, document.body);
    await advance(0);
  }

  beforeEach(() => {
    jest.useFakeTimers({ now: T0 * 1000 });
  });

  afterEach(() => {
    if (panel && !panel.isDisposed) {
      panel.dispose();
    }
    model?.dispose();
    jest.useRealTimers();
  });

  it('with one node looks as it does today: no overview, no node selector', async () => {
    await open([]);
    expect(model.view).toBe('node');
    expect(shown(q('.jp-air-gpu-overview'))).toBe(false);
    expect(shown(q('.jp-air-gpu-nav'))).toBe(false);
    expect(all('.jp-air-gpu-card')).toHaveLength(2);
    expect(q('.jp-air-gpu-node').textContent).toBe('gpu-node-1');
    // the Jupyter host's own history, without a node parameter
    expect(server.calls).toEqual([{ since: null, refresh: false, node: null }]);
    expect(renderer.renders).toHaveLength(3);
  });

  it('with more nodes shows every node sorted by name, with compact GPU rows', async () => {
    await open([nodeSummary('gpu-node-3'), nodeSummary('a-node')]);
    expect(model.view).toBe('overview');
    expect(shown(q('.jp-air-gpu-overview'))).toBe(true);
    expect(shown(q('.jp-air-gpu-host'))).toBe(false);
    expect(shown(q('.jp-air-gpu-charts'))).toBe(false);
    expect(all('.jp-air-gpu-card')).toHaveLength(0);
    // no node's history is fetched for the overview, and nothing is drawn
    expect(server.calls).toHaveLength(0);
    expect(renderer.renders).toHaveLength(0);
    expect(all('.jp-air-gpu-ov-node').map(el => el.dataset.node)).toEqual([
      'a-node',
      'gpu-node-1',
      'gpu-node-3'
    ]);
    expect(q('.jp-air-gpu-node').textContent).toBe('All nodes');
    const rows = nodeBody('a-node').querySelectorAll('.jp-air-gpu-ov-gpu');
    expect(rows).toHaveLength(2);
    const cells = Array.from((rows[0] as HTMLTableRowElement).cells).map(
      c => c.textContent
    );
    expect(cells).toEqual(['0', '87%', '39/80 GiB', '61 °C', '512 W']);
    expect(
      (rows[0] as HTMLElement)
        .querySelector('.jp-air-gpu-ov-mem')!
        .getAttribute('title')
    ).toBe('39.1 / 79.6 GiB');
    expect(q('.jp-air-gpu-ov-summary').textContent).toBe('3 nodes · 6 GPUs');
    // the Jupyter host is marked as such
    expect(
      shown(nodeBody('gpu-node-1').querySelector('.jp-air-gpu-ov-jupyter'))
    ).toBe(true);
    expect(
      shown(nodeBody('a-node').querySelector('.jp-air-gpu-ov-jupyter'))
    ).toBe(false);
  });

  it('filters nodes by name, GPU, state or flag', async () => {
    await open([
      nodeSummary('gpu-b'),
      nodeSummary('gpu-c', { state: 'stale' }),
      flaggedNode('cpu-d')
    ]);
    const filter = q<HTMLInputElement>('.jp-air-gpu-filter');
    const type = (text: string) => {
      filter.value = text;
      filter.dispatchEvent(new Event('input'));
    };
    type('GPU-B');
    expect(shownNodes()).toEqual(['gpu-b']);
    type('stale');
    expect(shownNodes()).toEqual(['gpu-c']);
    type('xid');
    expect(shownNodes()).toEqual(['cpu-d']);
    type('nothing-like-it');
    expect(shownNodes()).toEqual([]);
    expect(shown(q('.jp-air-gpu-ov-empty'))).toBe(true);
    expect(q('.jp-air-gpu-ov-empty').textContent).toBe(
      'No node matches “nothing-like-it”.'
    );
    type('');
    expect(shownNodes()).toHaveLength(4);
    // the filter holds across updates
    type('gpu-c');
    await advance(10_000);
    expect(shownNodes()).toEqual(['gpu-c']);
  });

  it('shows stale and lost nodes as such, with the time of their last sample', async () => {
    const last = T0 - 3600;
    await open([
      nodeSummary('gpu-b', {
        state: 'stale',
        last_sample_t: T0 - 35,
        last_seen: T0 - 34
      }),
      nodeSummary('gpu-c', { state: 'lost', last_sample_t: last })
    ]);
    const stale = nodeBody('gpu-b');
    const lost = nodeBody('gpu-c');
    expect(stale.dataset.state).toBe('stale');
    expect(stale.querySelector('.jp-air-gpu-ov-state')!.textContent).toBe(
      'stale'
    );
    const time = (t: number) => {
      const d = new Date(t * 1000);
      const p = (n: number) => String(n).padStart(2, '0');
      return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
    };
    expect(stale.querySelector('.jp-air-gpu-ov-seen')!.textContent).toContain(
      time(T0 - 35)
    );
    expect(lost.dataset.state).toBe('lost');
    expect(lost.querySelector('.jp-air-gpu-ov-state')!.textContent).toBe(
      'lost'
    );
    expect(lost.querySelector('.jp-air-gpu-ov-seen')!.textContent).toBe(
      new Date(last * 1000).toDateString() ===
        new Date(T0 * 1000).toDateString()
        ? `last sample ${time(last)}`
        : expect.any(String)
    );
    // a live node shows no state and no time
    const live = nodeBody('gpu-node-1');
    expect(shown(live.querySelector('.jp-air-gpu-ov-state'))).toBe(false);
    expect(shown(live.querySelector('.jp-air-gpu-ov-seen'))).toBe(false);
    expect(q('.jp-air-gpu-ov-summary').textContent).toBe(
      '3 nodes · 6 GPUs · 2 not reporting'
    );
  });

  it('flags a GPU in the overview row with the reason in words', async () => {
    await open([flaggedNode('gpu-b')]);
    const node = nodeBody('gpu-b');
    const row = node.querySelector<HTMLElement>(
      '.jp-air-gpu-ov-gpu[data-gpu-index="1"]'
    )!;
    expect(row.classList.contains('jp-mod-flagged')).toBe(true);
    const flags = node.querySelectorAll('.jp-air-gpu-flag');
    expect(flags).toHaveLength(1);
    expect(flags[0].textContent).toMatch(/^XID errors: 2 \(last: XID 79 at /);
    expect(
      node
        .querySelector('.jp-air-gpu-ov-gpu[data-gpu-index="0"]')!
        .classList.contains('jp-mod-flagged')
    ).toBe(false);
    expect(q('.jp-air-gpu-ov-summary').textContent).toBe(
      '2 nodes · 4 GPUs · 1 GPU flagged'
    );
  });

  it('opens a node from the overview, and goes back', async () => {
    await open([nodeSummary('gpu-b'), nodeSummary('gpu-c')]);
    const selections: (string | null)[] = [];
    model.selectionChanged.connect((_, node) => selections.push(node));
    nodeBody('gpu-c')
      .querySelector<HTMLButtonElement>('.jp-air-gpu-ov-open')!
      .click();
    await advance(0);
    expect(selections).toEqual(['gpu-c']);
    expect(model.view).toBe('node');
    expect(server.calls).toEqual([
      { since: null, refresh: false, node: 'gpu-c' }
    ]);
    expect(shown(q('.jp-air-gpu-overview'))).toBe(false);
    expect(q('.jp-air-gpu-node').textContent).toBe('gpu-c');
    expect(all('.jp-air-gpu-card')).toHaveLength(2);
    expect(renderer.renders).toHaveLength(3);
    // the node selector lists every node, this one selected
    const select = q<HTMLSelectElement>('.jp-air-gpu-node-select');
    expect(shown(select)).toBe(true);
    expect(optionLabels(select)).toEqual([
      'All nodes (3)',
      'gpu-b',
      'gpu-c',
      'gpu-node-1'
    ]);
    expect(select.value).toBe('gpu-c');
    // the next polls ask for that node's delta
    await advance(10_000);
    expect(server.calls[1]).toEqual({
      since: T0,
      refresh: false,
      node: 'gpu-c'
    });

    // another node from the selector: its history afresh
    await choose(select, 'gpu-b');
    expect(server.calls[2]).toEqual({
      since: null,
      refresh: false,
      node: 'gpu-b'
    });
    expect(model.samples.every(s => s.t >= T0 + 10)).toBe(true);

    // back to the overview
    const back = q<HTMLButtonElement>('.jp-air-gpu-back');
    expect(shown(back)).toBe(true);
    back.click();
    await advance(0);
    expect(selections).toEqual(['gpu-c', 'gpu-b', null]);
    expect(model.view).toBe('overview');
    expect(shown(q('.jp-air-gpu-overview'))).toBe(true);
    expect(shown(q('.jp-air-gpu-charts'))).toBe(false);
    expect(shown(back)).toBe(false);
    const calls = server.calls.length;
    await advance(10_000);
    expect(server.calls).toHaveLength(calls); // no node's history any more
  });

  it('says when the node shown stopped reporting, with its last values', async () => {
    await open([nodeSummary('gpu-b', { state: 'stale' })], s => {
      s.nodeMeta['gpu-b'] = { state: 'stale', last_seen: T0 - 40 };
    });
    model.setNode('gpu-b');
    await advance(0);
    const banner = q('.jp-air-gpu-nodestate');
    expect(shown(banner)).toBe(true);
    expect(banner.dataset.state).toBe('stale');
    expect(banner.textContent).toMatch(
      /^This node is stale: no report since \d\d:\d\d:\d\d\. These are its last values\.$/
    );
    expect(all('.jp-air-gpu-card')).toHaveLength(2);
  });

  it('waits for the restored node before its first request', async () => {
    server = new FakeServer();
    server.agents = [nodeSummary('gpu-b')];
    model = new GpuModel(server.options);
    let restore: (node: string | null) => void = () => undefined;
    model.restoreNode(new Promise(resolve => (restore = resolve)));
    await attach({ renderer: new FakeRenderer() });
    expect(server.overviewCalls).toHaveLength(0);
    expect(server.calls).toHaveLength(0);
    restore('gpu-b');
    await advance(0);
    expect(model.selectedNode).toBe('gpu-b');
    expect(server.overviewCalls).toHaveLength(1);
    expect(server.calls).toEqual([
      { since: null, refresh: false, node: 'gpu-b' }
    ]);
    expect(q('.jp-air-gpu-node').textContent).toBe('gpu-b');
  });

  it('keeps a restored node the server does not know, says why, and lets the user go back', async () => {
    server = new FakeServer();
    model = new GpuModel(server.options);
    model.restoreNode(Promise.resolve('gone-node'));
    await attach({ renderer: new FakeRenderer() });
    expect(q('.jp-air-gpu-error').textContent).toContain(
      "No telemetry from node 'gone-node'"
    );
    expect(shown(q('.jp-air-gpu-nav'))).toBe(true);
    q<HTMLButtonElement>('.jp-air-gpu-back').click();
    await advance(0);
    // one node left: today's view of it
    expect(model.view).toBe('node');
    expect(shown(q('.jp-air-gpu-error'))).toBe(false);
    expect(all('.jp-air-gpu-card')).toHaveLength(2);
    expect(shown(q('.jp-air-gpu-nav'))).toBe(false);
  });

  it('merges overview deltas: unchanged nodes are kept, every name listed', async () => {
    const b = nodeSummary('gpu-b', { last_seen: T0 - 50 });
    await open([b]);
    expect(server.overviewCalls).toEqual([null]);
    await advance(10_000);
    expect(server.overviewCalls).toEqual([null, T0]);
    // gpu-b was not in the delta (not changed): still shown, the same object
    expect(model.nodes.map(n => n.node)).toEqual(['gpu-b', 'gpu-node-1']);
    expect(model.nodes[0]).toBe(b);
    expect(all('.jp-air-gpu-ov-node')).toHaveLength(2);
  });

  it('shows the health of every GPU, unknown values as n/a and never 0', async () => {
    server = new FakeServer({}, t =>
      sample(t, [
        reading(0, {
          health: health({
            sm_clock_mhz: 1410,
            sm_clock_max_mhz: 1980,
            mem_clock_max_mhz: null,
            throttle_reasons: ['sw_power_cap', 'hw_thermal_slowdown'],
            fan_pct: null,
            ecc_corrected: null,
            ecc_uncorrected: null,
            retired_pages_sbe: null,
            retired_pages_dbe: null,
            retired_pages_pending: null,
            remapped_rows_correctable: 3,
            remapped_rows_uncorrectable: 0,
            xid_count: null,
            flags: ['thermal_throttling']
          }),
          mig: [
            {
              index: 0,
              uuid: 'MIG-a',
              mem_used_mb: 1228.8,
              mem_total_mb: 40192
            }
          ]
        }),
        reading(1, { health: null })
      ])
    );
    server.meta = {
      devices: [
        {
          index: 0,
          name: 'NVIDIA H100 80GB HBM3',
          uuid: 'GPU-0',
          mem_total_mb: 81559,
          power_limit_w: 700,
          mig: [
            {
              index: 0,
              uuid: 'MIG-a',
              name: 'NVIDIA H100 80GB HBM3 MIG 3g.40gb',
              mem_total_mb: 40192
            }
          ]
        }
      ]
    };
    model = new GpuModel(server.options);
    await attach();
    const card0 = q('.jp-air-gpu-card[data-gpu-index="0"]');
    const lines = Array.from(
      card0.querySelectorAll('.jp-air-gpu-health-label')
    ).map(dt => [dt.textContent, dt.nextElementSibling!.textContent]);
    expect(lines).toEqual([
      ['SM clock', '1410 / 1980 MHz'],
      ['Memory clock', '2619 MHz'],
      ['Throttling', 'power cap, hardware thermal slowdown'],
      ['Fan', 'n/a'],
      ['ECC errors', 'n/a'],
      ['Retired pages', 'n/a'],
      ['Remapped rows', '3 correctable, 0 uncorrectable'],
      ['XID errors', 'n/a']
    ]);
    expect(card0.querySelector('.jp-air-gpu-power')!.textContent).toBe(
      '512 / 700 W'
    );
    // flagged, with the reason in words
    expect(card0.classList.contains('jp-mod-flagged')).toBe(true);
    expect(shown(card0.querySelector('.jp-air-gpu-flagged'))).toBe(true);
    expect(
      Array.from(card0.querySelectorAll('.jp-air-gpu-flag')).map(
        li => li.textContent
      )
    ).toEqual(['Thermal slowdown: clocks lowered to cool the GPU']);
    // MIG instances under their GPU
    expect(
      Array.from(card0.querySelectorAll('.jp-air-gpu-mig-item')).map(
        li => li.textContent
      )
    ).toEqual(['MIG 0 · 3g.40gb · 1.2 / 39.3 GiB']);
    // no health at all: n/a, not flagged
    const card1 = q('.jp-air-gpu-card[data-gpu-index="1"]');
    expect(card1.querySelector('.jp-air-gpu-health-list')!.textContent).toBe(
      'Healthn/a'
    );
    expect(shown(card1.querySelector('.jp-air-gpu-flagged'))).toBe(false);
    expect(shown(card1.querySelector('.jp-air-gpu-mig'))).toBe(false);
    expect(panel.node.textContent).not.toMatch(/\b0 corrected/);
  });

  it('words every flag', async () => {
    server = new FakeServer({}, t =>
      sample(t, [
        reading(0, {
          health: health({
            ecc_uncorrected: 4,
            xid_count: 1,
            xid_errors: [{ t: T0, xid: 79 }],
            row_remap_failure: true,
            flags: [
              'ecc_uncorrected',
              'xid',
              'thermal_throttling',
              'hw_slowdown',
              'row_remap_failure'
            ]
          })
        })
      ])
    );
    model = new GpuModel(server.options);
    await attach();
    const texts = all('.jp-air-gpu-card .jp-air-gpu-flag').map(
      li => li.textContent
    );
    expect(texts).toEqual([
      'Uncorrected ECC errors: 4',
      expect.stringMatching(
        /^XID errors: 1 \(last: XID 79 at \d\d:\d\d:\d\d\)$/
      ),
      'Thermal slowdown: clocks lowered to cool the GPU',
      'Hardware slowdown: clocks lowered by the GPU',
      'Row remapping failed: the memory cannot be repaired'
    ]);
    expect(q('.jp-air-gpu-flagged').title).toBe(texts.join('\n'));
  });

  it('links a rank to its MLflow run, and a workload process to its job run', async () => {
    server = new FakeServer({}, t =>
      sample(t, [
        reading(0, {
          processes: [
            processInfo({
              pid: 11,
              run: {
                run_id: '4f2c9e8a1b7d4e3f',
                experiment_id: '7',
                rank: 1,
                local_rank: 1,
                node_rank: null,
                job_id: null
              }
            }),
            processInfo({
              pid: 12,
              kernel: null,
              run: {
                run_id: '9a8b7c6d5e4f3a2b',
                experiment_id: null,
                rank: 3,
                local_rank: null,
                node_rank: 1,
                job_id: '0123456789ab'
              }
            })
          ]
        })
      ])
    );
    model = new GpuModel(server.options);
    executed = [];
    await attach({ linker });
    const row = (pid: number) =>
      q(`.jp-air-gpu-process[data-pid="${pid}"] .jp-air-gpu-process-run`);
    const rank = row(11);
    const run = rank.querySelector<HTMLAnchorElement>('.jp-air-gpu-run-link')!;
    expect(run.textContent).toBe('run 4f2c9e8a');
    expect(run.getAttribute('href')).toBe(
      '/user/ada/air/mlflow/#/experiments/7/runs/4f2c9e8a1b7d4e3f'
    );
    expect(run.title).toBe('MLflow run 4f2c9e8a1b7d4e3f');
    expect(rank.querySelector('.jp-air-gpu-run-rank')!.textContent).toBe(
      'rank 1'
    );
    // the notebook is still named next to it
    expect(
      q('.jp-air-gpu-process[data-pid="11"] .jp-air-gpu-process-notebook')
        .textContent
    ).toBe('llm.ipynb');
    // a plain click opens the run in the MLflow tab
    expect(click(run)).toBe(true);
    expect(executed).toEqual([
      {
        id: CommandIDs.openMlflow,
        args: { path: '#/experiments/7/runs/4f2c9e8a1b7d4e3f' }
      }
    ]);
    // a middle click is left to the browser (a new tab on the href)
    expect(click(run, { button: 1 })).toBe(false);
    expect(executed).toHaveLength(1);

    const workload = row(12);
    expect(
      workload.querySelector('.jp-air-gpu-run-link')!.getAttribute('href')
    ).toBe('/user/ada/air/mlflow/#/runs/9a8b7c6d5e4f3a2b');
    expect(workload.querySelector('.jp-air-gpu-run-rank')!.textContent).toBe(
      'rank 3, node 1'
    );
    const job = workload.querySelector<HTMLAnchorElement>(
      '.jp-air-gpu-job-link'
    )!;
    expect(job.textContent).toBe('job 0123456789ab');
    expect(job.getAttribute('href')).toBe(
      '/user/ada/lab?air-workload=0123456789ab'
    );
    job.click();
    expect(executed[1]).toEqual({
      id: CommandIDs.openWorkloads,
      args: { id: '0123456789ab' }
    });
  });

  it('shows a run as text without links, and names from agents as text', async () => {
    await open([flaggedNode('gpu-b')], s => {
      s.agents[0].gpus[0].name = HOSTILE;
      s.agents[0].reason = HOSTILE;
      s.agents[0].backend = 'none';
    });
    expect(panel.node.textContent).toContain(HOSTILE);
    expect(panel.node.querySelector('img')).toBeNull();

    server = new FakeServer({}, t =>
      sample(t, [
        reading(0, {
          processes: [
            processInfo({
              run: {
                run_id: HOSTILE,
                experiment_id: HOSTILE,
                rank: 0,
                local_rank: 0,
                node_rank: null,
                job_id: HOSTILE
              }
            })
          ]
        })
      ])
    );
    model.dispose();
    panel.dispose();
    model = new GpuModel(server.options);
    await attach();
    const cell = q('.jp-air-gpu-process-run');
    expect(cell.querySelector('a')).toBeNull();
    expect(cell.textContent).toContain(`run ${HOSTILE.slice(0, 8)}`);
    expect(cell.textContent).toContain(`job ${HOSTILE}`);
    expect(panel.node.querySelector('img')).toBeNull();
  });
});
