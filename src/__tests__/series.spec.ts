import {
  METRICS,
  bucketFor,
  buildAllSeries,
  buildSeries,
  gpuIndices,
  thinAligned
} from '../gpu/series';
import { ISample } from '../gpu/types';
import { trans } from './helpers';
import { T0, reading, sample } from './fixtures';

describe('series', () => {
  it('makes one series per GPU sharing x values in unix seconds', () => {
    const samples = [
      sample(T0, [reading(0, { util_pct: 10 }), reading(1, { util_pct: 20 })]),
      sample(T0 + 10, [
        reading(0, { util_pct: 30 }),
        reading(1, { util_pct: 40 })
      ])
    ];
    const series = buildSeries(samples, 'util', 10);
    expect(series.map(s => s.gpuIndex)).toEqual([0, 1]);
    expect(series[0].x).toEqual([T0, T0 + 10]);
    expect(series[1].x).toBe(series[0].x);
    expect(series[0].y).toEqual([10, 30]);
    expect(series[1].y).toEqual([20, 40]);
  });

  it('charts memory in GiB and temperature in °C', () => {
    const samples = [
      sample(T0, [reading(0, { mem_used_mb: 2048, temp_c: 55 })])
    ];
    const all = buildAllSeries(samples, 10);
    expect(all.mem[0].y).toEqual([2]);
    expect(all.temp[0].y).toEqual([55]);
    expect(METRICS.mem.title(trans)).toContain('GiB');
  });

  it('inserts a null point where samples are more than 2 × interval apart', () => {
    const times = [0, 10, 20, 100, 110];
    const samples = times.map(d => sample(T0 + d));
    const [gpu0] = buildSeries(samples, 'util', 10);
    expect(gpu0.y).toEqual([87, 87, 87, null, 87, 87]);
    expect(gpu0.x[3]).toBe(T0 + 60);
  });

  it('does not break the line for regular samples or a refresh in between', () => {
    // 20 s apart is exactly 2 × interval: still continuous; 13 s after a refresh at +7
    const samples = [0, 20, 27, 40].map(d => sample(T0 + d));
    const [gpu0] = buildSeries(samples, 'util', 10);
    expect(gpu0.y).not.toContain(null);
    expect(gpu0.y).toHaveLength(4);
  });

  it('uses the interval to decide what is a gap', () => {
    const samples = [0, 30].map(d => sample(T0 + d));
    expect(buildSeries(samples, 'util', 10)[0].y).toEqual([87, null, 87]);
    expect(buildSeries(samples, 'util', 20)[0].y).toEqual([87, 87]);
  });

  it('turns unsupported metrics, lost GPUs and missing GPUs into holes, not 0', () => {
    const samples = [
      sample(T0, [reading(0, { mem_used_mb: null }), reading(1)]),
      sample(T0 + 10, [
        reading(0),
        reading(1, { lost: true, util_pct: null, temp_c: null })
      ]),
      sample(T0 + 20, [reading(0)])
    ];
    const all = buildAllSeries(samples, 10);
    expect(all.mem[0].y).toEqual([null, 40000 / 1024, 40000 / 1024]);
    expect(all.util[1].y).toEqual([87, null, null]);
    expect(all.temp[1].y).toEqual([61, null, null]);
  });

  it('lists the GPU indices of all samples in order', () => {
    const samples = [
      sample(T0, [reading(2)]),
      sample(T0 + 10, [reading(0), reading(2)])
    ];
    expect(gpuIndices(samples)).toEqual([0, 2]);
    expect(buildSeries(samples, 'util', 10)[0].y).toEqual([null, 87]);
    expect(buildSeries([], 'util', 10)).toEqual([]);
  });

  it('charts a sample whose GPU list is left out as a hole', () => {
    // `gpus` has a default, so the schema lets a sample leave it out
    const bare: ISample = { t: T0 + 10, node: 'gpu-node-1', host: {} };
    const samples = [
      sample(T0, [reading(0)]),
      bare,
      sample(T0 + 20, [reading(0)])
    ];
    expect(gpuIndices(samples)).toEqual([0]);
    expect(buildSeries(samples, 'util', 10)[0].y).toEqual([87, null, 87]);
  });
});

describe('thinAligned', () => {
  it("keeps the first and last time of each bucket and each series' minimum and maximum in time order", () => {
    const x = [0, 1, 2, 3, 4, 5, 6, 7];
    const a = [5, 9, 1, 5, 5, 2, 5, 8];
    const b = [1, 1, 1, 7, 1, 1, 1, 1];
    const out = thinAligned(x, [a, b], 4);
    expect(out.x).toEqual([0, 3, 4, 7]);
    expect(out.ys[0]).toEqual([9, 1, 2, 8]);
    expect(out.ys[1]).toEqual([1, 7, 1, 1]);
  });

  it('keeps gap rows and does not bridge them; an unknown value makes a hole', () => {
    const x = [0, 1, 2, 3, 4, 5, 6, 7];
    const a = [1, 2, 3, null, 3, 4, 5, 6];
    const b = [1, 2, 3, null, 3, null, 5, 6];
    const out = thinAligned(x, [a, b], 100);
    expect(out.x).toEqual([0, 2, 3, 4, 7]);
    expect(out.ys[0]).toEqual([1, 3, null, 3, 6]);
    expect(out.ys[1]).toEqual([1, 3, null, null, null]);
  });

  it('aligns buckets to time, so a sliding window keeps the same points', () => {
    const x = Array.from({ length: 40 }, (_, i) => i * 10);
    const y = x.map((_, i) => (i * 7) % 13);
    const a = thinAligned(x, [y], 40);
    const b = thinAligned(x.slice(4), [y.slice(4)], 40);
    expect(b.ys[0]).toEqual(a.ys[0].slice(a.ys[0].length - b.ys[0].length));
  });

  it('returns the same arrays without a bucket', () => {
    const x = [0, 1];
    const y = [1, 2];
    const out = thinAligned(x, [y], 0);
    expect(out.x).toBe(x);
    expect(out.ys[0]).toBe(y);
  });

  it('chooses buckets for about two points per pixel, none when short enough', () => {
    expect(bucketFor(720, 10, 200)).toBe(40);
    expect(bucketFor(720, 10, 400)).toBe(0);
    expect(bucketFor(150, 10, 200)).toBe(0);
    expect(bucketFor(720, 10, 0)).toBe(0);
  });
});
