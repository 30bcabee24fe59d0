/**
 * Samples → chart series: pure functions, no DOM, no chart library.
 *
 * One series per GPU and metric, all sharing one x array (the sample times, unix seconds), as a
 * time-series chart draws them. Where two consecutive samples are
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
  /** Unix seconds, ascending; the same array for every series of a chart. */
  x: number[];
  y: (number | null)[];
}

/** The GPU indices present in any sample, ascending. */
export function gpuIndices(samples: readonly ISample[]): number[] {
  const seen = new Set<number>();
  for (const sample of samples) {
    for (const gpu of sample.gpus ?? []) {
      seen.add(gpu.index);
    }
  }
  return Array.from(seen).sort((a, b) => a - b);
}

/**
 * The x values shared by all series of these samples: one time per sample, plus one at the
 * middle of each gap (> 2 × interval) where every series gets `null`. Returns the x values and,
 * for each of them, the sample index it comes from (-1 for a gap point).
 */
export function timeAxis(
  samples: readonly ISample[],
  intervalS: number
): { x: number[]; source: number[] } {
  const maxStep = 2 * (intervalS > 0 ? intervalS : 10);
  const x: number[] = [];
  const source: number[] = [];
  for (let i = 0; i < samples.length; i++) {
    const t = samples[i].t;
    if (i > 0) {
      const previous = samples[i - 1].t;
      if (t - previous > maxStep) {
        x.push((previous + t) / 2);
        source.push(-1);
      }
    }
    x.push(t);
    source.push(i);
  }
  return { x, source };
}

/**
 * The series of every metric, one per GPU, in one pass over the samples.
 * All series share one x array (the chart renderer does not modify it).
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
    for (const gpu of samples[s].gpus ?? []) {
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
 * Thin aligned series (one x array shared by several y arrays) to at most two points per time
 * bucket of `bucketS` seconds, without losing peaks: the buckets are aligned to the epoch (so
 * they do not shift as the window slides and the line does not shimmer between updates); each
 * keeps the times of its first and last sample and, for every series, its minimum and maximum
 * in time order. A row where every series is `null` (a gap) ends a bucket and is kept; a series
 * with an unknown value within a bucket gets a hole there rather than a made-up value.
 * With `bucketS` 0 the same arrays are returned (not copies).
 */
export function thinAligned(
  x: readonly number[],
  ys: readonly (readonly (number | null)[])[],
  bucketS: number
): { x: number[]; ys: (number | null)[][] } {
  if (!(bucketS > 0)) {
    // as they are: the chart renderer only reads them
    return {
      x: x as number[],
      ys: ys as (number | null)[][]
    };
  }
  const n = x.length;
  const outX: number[] = [];
  const outYs: (number | null)[][] = ys.map(() => []);
  const gapAt = (i: number) => ys.every(y => y[i] === null);
  let i = 0;
  while (i < n) {
    if (gapAt(i)) {
      outX.push(x[i]);
      outYs.forEach(out => out.push(null));
      i++;
      continue;
    }
    const bucket = Math.floor(x[i] / bucketS);
    let end = i + 1;
    while (end < n && !gapAt(end) && Math.floor(x[end] / bucketS) === bucket) {
      end++;
    }
    if (end - i <= 2) {
      for (let k = i; k < end; k++) {
        outX.push(x[k]);
        ys.forEach((y, s) => outYs[s].push(y[k]));
      }
    } else {
      outX.push(x[i], x[end - 1]);
      ys.forEach((y, s) => {
        let minI = -1;
        let maxI = -1;
        let hole = false;
        for (let k = i; k < end; k++) {
          const v = y[k];
          if (v === null) {
            hole = true;
            break;
          }
          if (minI < 0 || v < (y[minI] as number)) {
            minI = k;
          }
          if (maxI < 0 || v > (y[maxI] as number)) {
            maxI = k;
          }
        }
        if (hole) {
          outYs[s].push(null, null);
        } else {
          const [first, second] = minI <= maxI ? [minI, maxI] : [maxI, minI];
          outYs[s].push(y[first], y[second]);
        }
      });
    }
    i = end;
  }
  return { x: outX, ys: outYs };
}

/**
 * The bucket length (seconds) that thins `samples` samples `intervalS` apart to about two points
 * per pixel of a plot `widthPx` wide; 0 when there are no more points than two per pixel (a
 * canvas draws that many cheaply, and thinning them would only lose detail).
 */
export function bucketFor(
  samples: number,
  intervalS: number,
  widthPx: number
): number {
  if (!(widthPx > 0) || !(intervalS > 0) || samples <= 2 * widthPx) {
    return 0;
  }
  return Math.ceil(samples / widthPx) * intervalS;
}
