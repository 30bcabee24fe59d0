/**
 * Fixed GPU API data and fakes (server, chart renderer) shared by the specs.
 */
import { IChartFigure, IChartRenderer } from '../gpu/chart';
import { IGpuFetchOptions } from '../gpu/api';
import { GpuModel } from '../gpu/model';
import {
  IClusterOverview,
  IGpuHealth,
  IGpuPayload,
  IGpuProcess,
  IGpuReading,
  IGpuSummary,
  INodeSummary,
  ISample
} from '../gpu/types';

/** A base time (unix seconds) for the fixtures. */
export const T0 = 1764410000;

export function reading(
  index: number,
  overrides: Partial<IGpuReading> = {}
): IGpuReading {
  return {
    index,
    util_pct: 87,
    mem_util_pct: 40,
    mem_used_mb: 40000,
    mem_total_mb: 81559,
    temp_c: 61,
    power_w: 512.3,
    power_limit_w: 700,
    lost: false,
    ...overrides
  };
}

export function sample(
  t: number,
  gpus: IGpuReading[] = [reading(0), reading(1, { util_pct: 12 })],
  node = 'gpu-node-1'
): ISample {
  return {
    t,
    node,
    host: { cpu_pct: 12.5, mem_used_mb: 10240, mem_total_mb: 65536 },
    gpus
  };
}

export function processInfo(overrides: Partial<IGpuProcess> = {}): IGpuProcess {
  return {
    pid: 4242,
    gpu_mem_mb: 39000,
    name: 'python',
    user: 'ada',
    command: 'python -m ipykernel_launcher -f /tmp/kernel-5c1.json',
    kernel: {
      kernel_id: '5c1d',
      kernel_name: 'python3',
      path: 'train/llm.ipynb'
    },
    ...overrides
  };
}

/** A healthy GPU's health, as NVML reports an H100's. */
export function health(overrides: Partial<IGpuHealth> = {}): IGpuHealth {
  return {
    sm_clock_mhz: 1410,
    sm_clock_max_mhz: 1980,
    mem_clock_mhz: 2619,
    mem_clock_max_mhz: 2619,
    throttle_reasons: [],
    fan_pct: 40,
    ecc_corrected: 0,
    ecc_uncorrected: 0,
    retired_pages_sbe: 0,
    retired_pages_dbe: 0,
    retired_pages_pending: false,
    remapped_rows_correctable: 0,
    remapped_rows_uncorrectable: 0,
    row_remap_pending: false,
    row_remap_failure: false,
    xid_count: 0,
    xid_errors: [],
    flags: [],
    ...overrides
  };
}

/** A node's overview row as the server serves it: with its GPUs' list (never left out). */
export type INodeRow = INodeSummary & { gpus: IGpuSummary[] };

/** A node's overview row (2 GPUs unless given). */
export function nodeSummary(
  node: string,
  overrides: Partial<INodeSummary> = {}
): INodeRow {
  return {
    node,
    source: 'agent',
    state: 'live',
    last_seen: T0 - 2,
    last_sample_t: T0 - 2,
    interval_s: 10,
    paused: false,
    held_by: [],
    error: null,
    backend: 'nvml',
    reason: null,
    driver_version: '560.35.03',
    host: { cpu_pct: 40, mem_used_mb: 20480, mem_total_mb: 65536 },
    gpus: [0, 1].map(index => ({
      ...reading(index),
      name: 'NVIDIA H100 80GB HBM3',
      uuid: `GPU-${node}-${index}`,
      health: health(),
      mig: []
    })),
    ...overrides
  };
}

/** The overview of these nodes (sorted by name, like the server's). */
export function overview(
  nodes: INodeSummary[],
  overrides: Partial<IClusterOverview> = {}
): IClusterOverview {
  const sorted = nodes
    .slice()
    .sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  return {
    now: T0,
    since: null,
    interval_s: 10,
    idle_timeout_s: 300,
    stale_after_intervals: 3,
    lost_after_s: 300,
    paused: false,
    resumed: false,
    node_names: sorted.map(n => n.node),
    nodes: sorted,
    ...overrides
  };
}

export function payload(overrides: Partial<IGpuPayload> = {}): IGpuPayload {
  const latest =
    overrides.latest === undefined ? sample(T0 - 5) : overrides.latest;
  return {
    backend: 'nvml',
    reason: null,
    devices: [0, 1].map(index => ({
      index,
      name: 'NVIDIA H100 80GB HBM3',
      uuid: `GPU-${index}`,
      mem_total_mb: 81559,
      power_limit_w: 700
    })),
    node: 'gpu-node-1',
    source: 'server',
    state: 'live',
    last_seen: T0 - 5,
    driver_version: '560.35.03',
    interval_s: 10,
    history_s: 7200,
    idle_timeout_s: 300,
    paused: false,
    resumed: false,
    held_by: [],
    error: null,
    now: T0,
    samples: latest ? [latest] : [],
    ...overrides,
    latest
  };
}

/**
 * A fake GPU API: each call takes a sample "now" (the faked Date.now) of the node asked for and
 * answers like the server: the whole history without `since`, only newer samples with it. The
 * overview lists this server's node (a sample taken now) and the `agents`' rows; with `since` it
 * holds only the rows that changed (here: this server's, and agents whose `last_seen` is newer).
 */
export class FakeServer {
  constructor(
    public meta: Partial<IGpuPayload> = {},
    public makeSample: (t: number, node: string) => ISample = (t, node) =>
      sample(t, undefined, node)
  ) {}

  calls: IGpuFetchOptions[] = [];
  overviewCalls: (number | null)[] = [];
  /** Other nodes (as agents report them): their overview rows. */
  agents: INodeRow[] = [];
  /** Per node: what `GET gpu?node=` answers besides the samples (e.g. a stale state). */
  nodeMeta: Record<string, Partial<IGpuPayload>> = {};
  /** Each node's history, this server's under its own name. */
  histories = new Map<string, ISample[]>();
  /** When set, the next call fails with it. */
  failNext: Error | null = null;
  /** When set, the next overview fails with it. */
  failNextOverview: Error | null = null;

  /** This server's node name. */
  get node(): string {
    return this.meta.node ?? 'gpu-node-1';
  }

  /** This server's history. */
  get history(): ISample[] {
    return this.historyOf(this.node);
  }

  set history(samples: ISample[]) {
    this.histories.set(this.node, samples);
  }

  historyOf(node: string): ISample[] {
    let history = this.histories.get(node);
    if (!history) {
      history = [];
      this.histories.set(node, history);
    }
    return history;
  }

  fetch = async (options: IGpuFetchOptions): Promise<IGpuPayload> => {
    this.calls.push(options);
    if (this.failNext) {
      const error = this.failNext;
      this.failNext = null;
      throw error;
    }
    const node = options.node ?? this.node;
    if (node !== this.node && !this.agents.some(a => a.node === node)) {
      throw new Error(`No telemetry from node '${node}'`);
    }
    const now = Date.now() / 1000;
    const history = this.historyOf(node);
    history.push(this.makeSample(now, node));
    const since = options.since;
    const samples = since === null ? history : history.filter(s => s.t > since);
    return payload({
      ...this.meta,
      ...(node === this.node
        ? {}
        : { node, source: 'agent', ...this.nodeMeta[node] }),
      now,
      latest: history[history.length - 1],
      samples: samples.slice()
    });
  };

  overview = async (since: number | null): Promise<IClusterOverview> => {
    this.overviewCalls.push(since);
    if (this.failNextOverview) {
      const error = this.failNextOverview;
      this.failNextOverview = null;
      throw error;
    }
    const now = Date.now() / 1000;
    // the server samples its own node whoever asks: its newest values, now
    const latest = this.makeSample(now, this.node);
    const own = nodeSummary(this.node, {
      source: 'server',
      last_seen: latest?.t ?? null,
      last_sample_t: latest?.t ?? null,
      backend: this.meta.backend === undefined ? 'nvml' : this.meta.backend,
      reason: this.meta.reason ?? null,
      host: latest?.host ?? null,
      gpus: (latest?.gpus ?? []).map(gpu => ({
        ...gpu,
        name: 'NVIDIA H100 80GB HBM3',
        uuid: `GPU-${gpu.index}`
      }))
    });
    const all = overview([own, ...this.agents], { now, since });
    if (since !== null) {
      all.nodes = all.nodes.filter(
        n => n.source === 'server' || (n.last_seen ?? 0) > since
      );
    }
    return all;
  };

  /** The model's options for this server. */
  get options(): GpuModel.IOptions {
    return { fetch: this.fetch, fetchOverview: this.overview };
  }
}

/** An overview fetcher of a one-node cluster (the Jupyter host's `gpu-node-1`). */
export const oneNode = async (): Promise<IClusterOverview> =>
  overview([nodeSummary('gpu-node-1', { source: 'server' })]);

/** Records what would have been drawn. */
export class FakeRenderer implements IChartRenderer {
  renders: { el: HTMLElement; figure: IChartFigure }[] = [];
  resized: HTMLElement[] = [];
  purged: HTMLElement[] = [];

  render(el: HTMLElement, figure: IChartFigure): void {
    this.renders.push({ el, figure });
  }

  resize(el: HTMLElement): void {
    this.resized.push(el);
  }

  purge(el: HTMLElement): void {
    this.purged.push(el);
  }
}
