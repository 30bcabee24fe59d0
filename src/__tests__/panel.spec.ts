import { Widget } from '@lumino/widgets';

import { GpuModel } from '../gpu/model';
import { GpuPanel } from '../gpu/panel';
import { IChartTheme, gpuColor } from '../gpu/theme';
import { RENDER_MEASURE } from '../gpu/timing';
import { ISample } from '../gpu/types';
import {
  FakeRenderer,
  FakeServer,
  T0,
  processInfo,
  reading,
  sample
} from './fixtures';
import { HOSTILE, advance, finders, shown } from './helpers';

/** A renderer that, like plotly's, must load before it draws; `loaded()` finishes loading. */
class LazyRenderer extends FakeRenderer {
  loaded: () => void = () => undefined;
  loads = 0;

  load(): Promise<void> {
    this.loads++;
    return new Promise(resolve => {
      this.loaded = resolve;
    });
  }
}

describe('GpuPanel', () => {
  let server: FakeServer;
  let renderer: FakeRenderer;
  let model: GpuModel;
  let panel: GpuPanel;
  let opened: string[];
  let theme: IChartTheme;
  /** When set, animation frames wait here until the test runs them; else they run at once. */
  let frames: (() => void)[] | null;

  const { q, text } = finders(() => panel.node);
  const card = (index: number) =>
    q(`.jp-air-gpu-card[data-gpu-index="${index}"]`);

  /** Open a panel on a fake server and let its first fetch answer. */
  async function open(
    meta: FakeServer['meta'] = {},
    makeSample?: (t: number) => ISample,
    history: ISample[] = [],
    chartRenderer: FakeRenderer = new FakeRenderer()
  ): Promise<void> {
    server = new FakeServer(meta, makeSample);
    server.history = history;
    renderer = chartRenderer;
    model = new GpuModel(server.options);
    opened = [];
    theme = {
      font: '#111111',
      fontMuted: '#555555',
      fontFamily: 'sans-serif',
      background: '#ffffff',
      grid: '#e0e0e0',
      line: '#bdbdbd',
      hoverBackground: '#eeeeee'
    };
    panel = new GpuPanel({
      model,
      renderer,
      openPath: path => opened.push(path),
      readTheme: () => ({ ...theme }),
      scheduleFrame: callback => {
        if (frames) {
          frames.push(callback);
        } else {
          callback();
        }
      }
    });
    Widget.attach(panel, document.body);
    await advance(0);
  }

  beforeEach(() => {
    jest.useFakeTimers({ now: T0 * 1000 });
    frames = null;
  });

  afterEach(() => {
    if (panel && !panel.isDisposed) {
      panel.dispose();
    }
    model?.dispose();
    jest.useRealTimers();
  });

  it('shows the node, host and per-GPU values', async () => {
    await open({ backend: 'simulated' });
    expect(q('.jp-air-gpu-title').textContent).toBe('GPU Resources');
    expect(text('.jp-air-gpu-node')).toBe('gpu-node-1');
    expect(shown(q('.jp-air-gpu-backend'))).toBe(true);
    expect(text('.jp-air-gpu-backend')).toBe('simulated');
    expect(text('.jp-air-gpu-host-cpu')).toBe('12.5%');
    expect(text('.jp-air-gpu-host-mem')).toBe('10.0 / 64.0 GiB');

    expect(panel.node.querySelectorAll('.jp-air-gpu-card')).toHaveLength(2);
    const gpu0 = card(0);
    expect(gpu0.querySelector('.jp-air-gpu-name')!.textContent).toBe(
      'NVIDIA H100 80GB HBM3'
    );
    expect(gpu0.querySelector('.jp-air-gpu-util')!.textContent).toBe('87%');
    expect(gpu0.querySelector('.jp-air-gpu-mem')!.textContent).toBe(
      '39.1 / 79.6 GiB'
    );
    expect(gpu0.querySelector('.jp-air-gpu-temp')!.textContent).toBe('61 °C');
    expect(gpu0.querySelector('.jp-air-gpu-power')!.textContent).toBe(
      '512 / 700 W'
    );
    expect(card(1).querySelector('.jp-air-gpu-util')!.textContent).toBe('12%');
    expect(shown(q('.jp-air-gpu-loading'))).toBe(false);
    expect(shown(q('.jp-air-gpu-paused'))).toBe(false);
    expect(shown(q('.jp-air-gpu-error'))).toBe(false);
  });

  it('has no simulated badge for real GPUs', async () => {
    await open({ backend: 'nvml' });
    expect(shown(q('.jp-air-gpu-backend'))).toBe(false);
  });

  it('shows a loading state before the first answer', () => {
    model = new GpuModel({
      fetch: () => new Promise(() => undefined),
      fetchOverview: () => new Promise(() => undefined)
    });
    panel = new GpuPanel({ model });
    expect(shown(panel.node.querySelector('.jp-air-gpu-loading'))).toBe(true);
    expect(panel.node.querySelectorAll('.jp-air-gpu-card')).toHaveLength(0);
  });

  it('shows unsupported metrics as n/a, not 0', async () => {
    await open({}, t =>
      sample(t, [
        reading(0, {
          util_pct: null,
          mem_used_mb: null,
          temp_c: null,
          power_w: null
        })
      ])
    );
    const gpu0 = card(0);
    for (const cls of ['util', 'mem', 'temp', 'power']) {
      expect(gpu0.querySelector(`.jp-air-gpu-${cls}`)!.textContent).toBe('n/a');
    }
    expect(gpu0.textContent).not.toMatch(/\b0(%| W| °C| \/)/);
    // the meters show nothing rather than an empty (0 %) bar
    expect(shown(gpu0.querySelector('.jp-air-gpu-meter-fill'))).toBe(false);
  });

  it('marks a lost GPU and shows no numbers for it', async () => {
    await open({}, t =>
      sample(t, [
        reading(0),
        reading(1, {
          lost: true,
          util_pct: null,
          mem_used_mb: null,
          temp_c: null,
          power_w: null
        })
      ])
    );
    const lost = card(1);
    expect(lost.classList.contains('jp-mod-lost')).toBe(true);
    expect(shown(lost.querySelector('.jp-air-gpu-lost'))).toBe(true);
    expect(lost.querySelector('.jp-air-gpu-lost')!.textContent).toBe('lost');
    expect(shown(lost.querySelector('.jp-air-gpu-util'))).toBe(false);
    expect(shown(lost.querySelector('.jp-air-gpu-mem'))).toBe(false);
    expect(shown(card(0).querySelector('.jp-air-gpu-lost'))).toBe(false);
    expect(card(0).querySelector('.jp-air-gpu-util')!.textContent).toBe('87%');
  });

  it('updates values in place on each poll', async () => {
    let util = 50;
    await open({}, t => sample(t, [reading(0, { util_pct: util })]));
    const before = card(0);
    const value = before.querySelector('.jp-air-gpu-util')!;
    expect(value.textContent).toBe('50%');
    util = 75;
    await advance(10_000);
    expect(card(0)).toBe(before);
    expect(before.querySelector('.jp-air-gpu-util')).toBe(value);
    expect(value.textContent).toBe('75%');
  });

  it('ticks "updated N s ago" every second', async () => {
    await open();
    expect(text('.jp-air-gpu-updated')).toBe('updated 0 s ago');
    await advance(3_000);
    expect(text('.jp-air-gpu-updated')).toBe('updated 3 s ago');
    // the 10 s poll brings a fresh sample
    await advance(7_000);
    expect(text('.jp-air-gpu-updated')).toBe('updated 0 s ago');
  });

  it('shows the pause after the idle timeout and Resume polls again', async () => {
    await open({ idle_timeout_s: 300 });
    await advance(300_000);
    const banner = q('.jp-air-gpu-paused');
    expect(shown(banner)).toBe(true);
    expect(banner.textContent).toContain(
      'Paused after 5 minutes without activity'
    );
    const calls = server.calls.length;
    await advance(60_000);
    expect(server.calls).toHaveLength(calls);

    q<HTMLButtonElement>('.jp-air-gpu-resume').click();
    await advance(0);
    expect(server.calls).toHaveLength(calls + 1);
    expect(shown(q('.jp-air-gpu-paused'))).toBe(false);
    await advance(10_000);
    expect(server.calls).toHaveLength(calls + 2);
  });

  it('says the real idle timeout in the pause banner', async () => {
    await open({ idle_timeout_s: 120 });
    await advance(120_000);
    expect(text('.jp-air-gpu-paused-text')).toBe(
      'Paused after 2 minutes without activity'
    );
  });

  it('stops polling while hidden and resumes when shown', async () => {
    await open();
    panel.hide();
    const calls = server.calls.length;
    await advance(60_000);
    expect(server.calls).toHaveLength(calls);
    panel.show();
    await advance(0);
    expect(server.calls).toHaveLength(calls + 1);
  });

  it('Refresh asks the server for a sample now', async () => {
    await open();
    q<HTMLButtonElement>('.jp-air-gpu-refresh').click();
    await advance(0);
    expect(server.calls[server.calls.length - 1]).toEqual({
      since: T0,
      refresh: true,
      node: null
    });
  });

  it('shows the server error message', async () => {
    await open();
    server.failNext = new Error('Forbidden: no access to air-gpu');
    await advance(10_000);
    expect(shown(q('.jp-air-gpu-error'))).toBe(true);
    expect(text('.jp-air-gpu-error')).toContain(
      'Forbidden: no access to air-gpu'
    );
    // the last data stays visible
    expect(card(0).querySelector('.jp-air-gpu-util')!.textContent).toBe('87%');
  });

  it('shows why there is no GPU, and still the host', async () => {
    await open(
      {
        backend: 'none',
        reason: 'NVML is not available: libnvidia-ml.so.1 not found',
        devices: []
      },
      t => sample(t, [])
    );
    const nogpu = q('.jp-air-gpu-nogpu');
    expect(shown(nogpu)).toBe(true);
    expect(nogpu.textContent).toBe(
      'NVML is not available: libnvidia-ml.so.1 not found'
    );
    expect(shown(q('.jp-air-gpu-host'))).toBe(true);
    expect(text('.jp-air-gpu-host-cpu')).toBe('12.5%');
    expect(text('.jp-air-gpu-host-mem')).toBe('10.0 / 64.0 GiB');
    expect(panel.node.querySelectorAll('.jp-air-gpu-card')).toHaveLength(0);
    expect(shown(q('.jp-air-gpu-charts'))).toBe(false);
    expect(renderer.renders).toHaveLength(0);
  });

  it('lists GPU processes with their notebook, kernel or nothing', async () => {
    await open({}, t =>
      sample(t, [
        reading(0, {
          processes: [
            processInfo(),
            processInfo({
              pid: 7,
              gpu_mem_mb: 1024,
              kernel: { kernel_id: 'k2', kernel_name: 'julia-1.10', path: null }
            })
          ]
        }),
        reading(1, {
          processes: [
            processInfo({
              pid: 99,
              user: null,
              command: null,
              name: null,
              kernel: null
            })
          ]
        })
      ])
    );
    const rows = Array.from(
      panel.node.querySelectorAll<HTMLTableRowElement>(
        '.jp-air-gpu-processes tbody tr'
      )
    );
    expect(rows.map(r => r.dataset.pid)).toEqual(['4242', '7', '99']);
    const cells = (r: HTMLTableRowElement) =>
      Array.from(r.cells).map(c => c.textContent);
    expect(cells(rows[0])).toEqual([
      '0',
      '4242',
      'ada',
      'python -m ipykernel_launcher -f /tmp/kernel-5c1.json',
      '38.09 GiB',
      'llm.ipynb',
      '—'
    ]);
    expect(
      rows[0].querySelector<HTMLElement>('.jp-air-gpu-notebook-link')!.title
    ).toBe('Open train/llm.ipynb');
    expect(
      rows[0].querySelector<HTMLElement>('.jp-air-gpu-process-command')!.title
    ).toBe('python -m ipykernel_launcher -f /tmp/kernel-5c1.json');
    expect(cells(rows[1])[5]).toBe('julia-1.10 kernel');
    expect(cells(rows[2])).toEqual([
      '1',
      '99',
      '—',
      '—',
      '38.09 GiB',
      '—',
      '—'
    ]);

    rows[0]
      .querySelector<HTMLButtonElement>('.jp-air-gpu-notebook-link')!
      .click();
    expect(opened).toEqual(['train/llm.ipynb']);
    expect(shown(q('.jp-air-gpu-processes-empty'))).toBe(false);
  });

  it('says when no process uses the GPUs', async () => {
    await open();
    expect(shown(q('.jp-air-gpu-processes-empty'))).toBe(true);
    expect(
      panel.node.querySelectorAll('.jp-air-gpu-processes tbody tr')
    ).toHaveLength(0);
  });

  it('shows hostile strings as text and creates no element from them', async () => {
    await open(
      {
        node: HOSTILE,
        devices: [
          {
            index: 0,
            name: HOSTILE,
            uuid: null,
            mem_total_mb: null,
            power_limit_w: null
          }
        ],
        held_by: [HOSTILE]
      },
      t =>
        sample(
          t,
          [
            reading(0, {
              processes: [
                processInfo({
                  user: HOSTILE,
                  command: HOSTILE,
                  kernel: {
                    kernel_id: 'k',
                    kernel_name: HOSTILE,
                    path: HOSTILE
                  }
                })
              ]
            })
          ],
          HOSTILE
        )
    );
    expect(text('.jp-air-gpu-node')).toBe(HOSTILE);
    expect(card(0).querySelector('.jp-air-gpu-name')!.textContent).toBe(
      HOSTILE
    );
    expect(text('.jp-air-gpu-process-command')).toBe(HOSTILE);
    expect(text('.jp-air-gpu-process-user')).toBe(HOSTILE);
    expect(text('.jp-air-gpu-notebook-link')).toBe(HOSTILE);
    expect(text('.jp-air-gpu-held')).toContain(HOSTILE);
    expect(panel.node.querySelector('img')).toBeNull();
    expect(document.querySelector('img')).toBeNull();
  });

  describe('charts', () => {
    it('draws utilisation, memory and temperature with one line per GPU', async () => {
      await open();
      expect(renderer.renders).toHaveLength(3);
      const [util, mem, temp] = renderer.renders;
      expect(util.el).toBe(panel.chartElement('util'));
      expect(
        util.el.closest('.jp-air-gpu-chart')!.getAttribute('data-metric')
      ).toBe('util');
      expect(mem.el).toBe(panel.chartElement('mem'));
      expect(temp.el).toBe(panel.chartElement('temp'));
      expect(util.figure.lines.map(l => l.name)).toEqual(['GPU 0', 'GPU 1']);
      expect(util.figure.x).toEqual([T0]);
      expect(util.figure.lines[0].y).toEqual([87]);
      expect(util.figure.yRange).toEqual([0, 100]);
      expect(util.figure.unit).toBe('%');
      expect(util.figure.missing).toBe('n/a');
      expect(mem.figure.lines[0].y[0]).toBeCloseTo(40000 / 1024);
      expect(mem.figure.yRange![1]).toBeCloseTo(81559 / 1024);
      expect(temp.figure.lines[1].y).toEqual([61]);
      expect(temp.figure.yRange).toBeNull();
      // one colour per GPU, the one of its card's swatch
      expect(util.figure.lines.map(l => l.color)).toEqual([
        gpuColor(0),
        gpuColor(1)
      ]);
      // theme colours from the JupyterLab variables
      expect(util.figure.theme.background).toBe('#ffffff');
      expect(util.figure.theme.font).toBe('#111111');
      expect(util.figure.theme.grid).toBe('#e0e0e0');
    });

    it('redraws with new data on each poll, and not when nothing changed', async () => {
      await open();
      await advance(10_000);
      expect(renderer.renders).toHaveLength(6);
      expect(renderer.renders[3].figure.lines[0].y).toHaveLength(2);
      panel.render();
      expect(renderer.renders).toHaveLength(6);
    });

    it('does not draw while hidden, and catches up when shown', async () => {
      await open();
      panel.hide();
      await advance(5_000);
      await model.refresh();
      expect(model.samples).toHaveLength(2);
      expect(renderer.renders).toHaveLength(3);
      panel.show();
      expect(renderer.renders).toHaveLength(6);
      expect(renderer.renders[5].figure.lines[0].y).toHaveLength(2);
    });

    it('redraws in the new colours on a theme change', async () => {
      await open();
      theme.background = '#111111';
      theme.font = '#eeeeee';
      panel.themeChanged();
      expect(renderer.renders).toHaveLength(6);
      expect(renderer.renders[5].figure.theme.background).toBe('#111111');
      expect(renderer.renders[5].figure.theme.font).toBe('#eeeeee');
    });

    it('draws one chart per animation frame, the newest data first come first served', async () => {
      frames = [];
      await open();
      // the text is there at once, the charts wait for frames
      expect(card(0).querySelector('.jp-air-gpu-util')!.textContent).toBe(
        '87%'
      );
      expect(renderer.renders).toHaveLength(0);
      expect(frames).toHaveLength(1);
      frames.shift()!();
      expect(renderer.renders.map(r => r.el)).toEqual([
        panel.chartElement('util')
      ]);
      expect(frames).toHaveLength(1);
      // new data arrives between frames: the remaining charts draw it, then util again
      await advance(10_000);
      expect(frames).toHaveLength(1);
      while (frames.length) {
        frames.shift()!();
      }
      expect(
        renderer.renders.map(r => r.el.parentElement!.dataset.metric)
      ).toEqual(['util', 'mem', 'temp', 'util']);
      expect(renderer.renders[1].figure.lines[0].y).toHaveLength(2);
      expect(renderer.renders[3].figure.lines[0].y).toHaveLength(2);
    });

    it('thins long histories to about two points per pixel, keeping peaks', async () => {
      // 1000 samples, 10 s apart, one spike; the chart is 200 px wide
      const history = Array.from({ length: 1000 }, (_, i) =>
        sample(T0 - 10_000 + i * 10, [
          reading(0, { util_pct: i === 800 ? 100 : 10 + (i % 2) * 10 })
        ])
      );
      const width = jest
        .spyOn(HTMLElement.prototype, 'clientWidth', 'get')
        .mockReturnValue(200);
      try {
        await open({}, t => sample(t, [reading(0, { util_pct: 10 })]), history);
      } finally {
        width.mockRestore();
      }
      expect(model.samples).toHaveLength(721); // the 2 h window
      const util = renderer.renders.find(
        r => r.el === panel.chartElement('util')
      )!;
      const { x, lines } = util.figure;
      const y = lines[0].y;
      expect(y).toHaveLength(x.length);
      expect(y.length).toBeLessThanOrEqual(400);
      expect(y.length).toBeGreaterThan(200);
      expect(Math.max(...(y as number[]))).toBe(100);
      expect(Math.min(...(y as number[]))).toBe(10);
    });

    it('draws a full 2 h history of 720 points as it is on a wide chart', async () => {
      const history = Array.from({ length: 720 }, (_, i) =>
        sample(T0 - 7200 + i * 10)
      );
      const width = jest
        .spyOn(HTMLElement.prototype, 'clientWidth', 'get')
        .mockReturnValue(400);
      try {
        await open({}, undefined, history);
      } finally {
        width.mockRestore();
      }
      const util = renderer.renders.find(
        r => r.el === panel.chartElement('util')
      )!;
      expect(util.figure.x).toHaveLength(model.samples.length);
    });

    it('draws once the chart library has loaded, and times that draw with its update', async () => {
      const measures: string[] = [];
      const perf = performance as any;
      const measure = perf.measure;
      perf.measure = (name: string) => {
        measures.push(name);
      };
      try {
        const lazy = new LazyRenderer();
        const updates = () =>
          measures.filter(name => name === RENDER_MEASURE).length;
        await open({}, undefined, [], lazy);
        expect(lazy.loads).toBe(1);
        expect(lazy.renders).toHaveLength(0);
        // the first data's update is not over: its charts are still to be drawn
        const before = updates();
        // a new sample while loading: still one load, still the same update
        await advance(10_000);
        expect(lazy.loads).toBe(1);
        expect(updates()).toBe(before);
        lazy.loaded();
        await advance(0);
        expect(lazy.renders.length).toBeGreaterThan(0);
        expect(lazy.renders[0].figure.lines[0].y).toHaveLength(2);
        expect(updates()).toBe(before + 1);
      } finally {
        perf.measure = measure;
      }
    });

    it('purges the charts when disposed', async () => {
      await open();
      panel.dispose();
      expect(renderer.purged).toHaveLength(3);
    });
  });
});
