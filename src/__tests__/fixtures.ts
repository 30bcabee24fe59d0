/**
 * Fixed GPU API data and fakes (server, chart renderer) shared by the specs.
 */
import { IChartLayout, IChartRenderer, IChartTrace } from '../gpu/chart';
import { IGpuFetchOptions } from '../gpu/api';
import { IGpuPayload, IGpuProcess, IGpuReading, ISample } from '../gpu/types';

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
 * A fake GPU API: each call takes a sample "now" (the faked Date.now) and answers like the
 * server: the whole history without `since`, only newer samples with it.
 */
export class FakeServer {
  constructor(
    public meta: Partial<IGpuPayload> = {},
    public makeSample: (t: number) => ISample = t => sample(t)
  ) {}

  calls: IGpuFetchOptions[] = [];
  history: ISample[] = [];
  /** When set, the next call fails with it. */
  failNext: Error | null = null;

  fetch = async (options: IGpuFetchOptions): Promise<IGpuPayload> => {
    this.calls.push(options);
    if (this.failNext) {
      const error = this.failNext;
      this.failNext = null;
      throw error;
    }
    const now = Date.now() / 1000;
    this.history.push(this.makeSample(now));
    const since = options.since;
    const samples =
      since === null ? this.history : this.history.filter(s => s.t > since);
    return payload({
      ...this.meta,
      now,
      latest: this.history[this.history.length - 1],
      samples: samples.slice()
    });
  };
}

/** Records what would have been drawn. */
export class FakeRenderer implements IChartRenderer {
  renders: { el: HTMLElement; traces: IChartTrace[]; layout: IChartLayout }[] =
    [];
  resized: HTMLElement[] = [];
  purged: HTMLElement[] = [];

  render(el: HTMLElement, traces: IChartTrace[], layout: IChartLayout): void {
    this.renders.push({ el, traces, layout });
  }

  resize(el: HTMLElement): void {
    this.resized.push(el);
  }

  purge(el: HTMLElement): void {
    this.purged.push(el);
  }
}
