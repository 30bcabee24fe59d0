/**
 * Samples → chart series: pure functions, no DOM, no plotly.
 *
 * One series per GPU and metric, x = the sample time as a Date. Where two consecutive samples are
 * more than twice the poll interval apart (sampling was paused, the server was down), a `null`
 * point is inserted so the chart shows a gap instead of a line interpolated across the pause.
 * Missing metrics (`null`), lost GPUs and GPUs absent from a sample are `null` too: holes, not 0.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { num } from '../common/text';
import { IGpuReading, ISample } from './types';

/** The metrics drawn as charts. */
export type GpuMetric = 'util' | 'mem' | 'temp';

/** How a metric is read, labelled and scaled. */
export interface IMetricInfo {
  key: GpuMetric;
  /** Chart title. */
  title(trans: TranslationBundle): string;
  /** Unit shown on the axis and in hovers. */
  unit(trans: TranslationBundle): string;
  /** The value of one GPU reading, `null` when unknown. */
  value(gpu: IGpuReading): number | null;
}

const MIB_PER_GIB = 1024;

/** Memory is charted in GiB used (the card shows used / total in GiB too). */
export const METRICS: Record<GpuMetric, IMetricInfo> = {
  util: {
    key: 'util',
    title: trans => trans.__('GPU utilisation (%)'),
    unit: () => '%',
    value: gpu => num(gpu.util_pct)
  },
  mem: {
    key: 'mem',
    title: trans => trans.__('GPU memory used (GiB)'),
    unit: trans => trans.__('GiB'),
    value: gpu => {
      const mb = num(gpu.mem_used_mb);
      return mb === null ? null : mb / MIB_PER_GIB;
    }
  },
  temp: {
    key: 'temp',
    title: trans => trans.__('GPU temperature (°C)'),
    unit: trans => trans.__('°C'),
    value: gpu => num(gpu.temp_c)
  }
};

/** The metrics in display order. */
export const METRIC_ORDER: GpuMetric[] = ['util', 'mem', 'temp'];

/** One GPU's series for one metric. */
export interface ISeries {
  gpuIndex: number;
  x: Date[];
  y: (number | null)[];
}

/** The GPU indices present in any sample, ascending. */
export function gpuIndices(samples: readonly ISample[]): number[] {
  const seen = new Set<number>();
  for (const sample of samples) {
    for (const gpu of sample.gpus) {
      seen.add(gpu.index);
    }
  }
  return Array.from(seen).sort((a, b) => a - b);
}

/**
 * The x values shared by all series of these samples: one Date per sample, plus a Date at the
 * middle of each gap (> 2 × interval) where every series gets `null`. Returns the x values and,
 * for each of them, the sample index it comes from (-1 for a gap point).
 */
export function timeAxis(
  samples: readonly ISample[],
  intervalS: number
): { x: Date[]; source: number[] } {
  const maxStep = 2 * (intervalS > 0 ? intervalS : 10);
  const x: Date[] = [];
  const source: number[] = [];
  for (let i = 0; i < samples.length; i++) {
    const t = samples[i].t;
    if (i > 0) {
      const previous = samples[i - 1].t;
      if (t - previous > maxStep) {
        x.push(new Date(((previous + t) / 2) * 1000));
        source.push(-1);
      }
    }
    x.push(new Date(t * 1000));
    source.push(i);
  }
  return { x, source };
}

/**
 * The series of every metric, one per GPU, in one pass over the samples.
 * All series share one x array (plotly does not modify it).
 */
export function buildAllSeries(
  samples: readonly ISample[],
  intervalS: number,
  metrics: readonly GpuMetric[] = METRIC_ORDER
): Record<GpuMetric, ISeries[]> {
  const indices = gpuIndices(samples);
  const { x, source } = timeAxis(samples, intervalS);
  const slot = new Map<number, number>();
  indices.forEach((index, position) => slot.set(index, position));
  const result = {} as Record<GpuMetric, ISeries[]>;
  const columns: (number | null)[][][] = metrics.map(() =>
    indices.map(() => new Array<number | null>(x.length).fill(null))
  );
  for (let k = 0; k < source.length; k++) {
    const s = source[k];
    if (s < 0) {
      continue; // gap point: null everywhere
    }
    for (const gpu of samples[s].gpus) {
      const position = slot.get(gpu.index);
      if (position === undefined || gpu.lost) {
        continue;
      }
      for (let m = 0; m < metrics.length; m++) {
        columns[m][position][k] = METRICS[metrics[m]].value(gpu);
      }
    }
  }
  metrics.forEach((metric, m) => {
    result[metric] = indices.map((index, position) => ({
      gpuIndex: index,
      x,
      y: columns[m][position]
    }));
  });
  return result;
}

/** The series of one metric, one per GPU. */
export function buildSeries(
  samples: readonly ISample[],
  metric: GpuMetric,
  intervalS: number
): ISeries[] {
  return buildAllSeries(samples, intervalS, [metric])[metric];
}

/**
 * Thin a series to about `maxPoints` points without losing peaks: the samples are grouped into
 * time buckets of `bucketMs` (aligned to the epoch, so buckets do not shift as the window
 * slides and the line does not shimmer between updates) and each bucket keeps its minimum and
 * maximum, in time order. A `null` (gap or unknown value) ends a bucket and is kept once.
 * Series short enough are returned as they are.
 */
export function decimate(
  x: readonly Date[],
  y: readonly (number | null)[],
  bucketMs: number
): { x: Date[]; y: (number | null)[] } {
  const n = Math.min(x.length, y.length);
  const outX: Date[] = [];
  const outY: (number | null)[] = [];
  if (!(bucketMs > 0)) {
    return { x: x.slice(0, n), y: y.slice(0, n) };
  }
  let i = 0;
  while (i < n) {
    const value = y[i];
    if (value === null) {
      if (outY.length === 0 || outY[outY.length - 1] !== null) {
        outX.push(x[i]);
        outY.push(null);
      }
      i++;
      continue;
    }
    const bucket = Math.floor(x[i].getTime() / bucketMs);
    let minI = i;
    let maxI = i;
    let end = i + 1;
    while (
      end < n &&
      y[end] !== null &&
      Math.floor(x[end].getTime() / bucketMs) === bucket
    ) {
      if ((y[end] as number) < (y[minI] as number)) {
        minI = end;
      }
      if ((y[end] as number) > (y[maxI] as number)) {
        maxI = end;
      }
      end++;
    }
    const first = Math.min(minI, maxI);
    const second = Math.max(minI, maxI);
    outX.push(x[first]);
    outY.push(y[first]);
    if (second !== first) {
      outX.push(x[second]);
      outY.push(y[second]);
    }
    i = end;
  }
  return { x: outX, y: outY };
}

/**
 * The bucket length that thins `samples` samples `intervalS` apart to about one point per pixel
 * of a plot `widthPx` wide (a minimum and a maximum per two pixels); 0 when no thinning is needed.
 */
export function bucketFor(
  samples: number,
  intervalS: number,
  widthPx: number
): number {
  if (!(widthPx > 0) || !(intervalS > 0) || samples <= widthPx) {
    return 0;
  }
  return Math.ceil(samples / (widthPx / 2)) * intervalS * 1000;
}
