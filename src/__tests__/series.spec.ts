import {
  METRICS,
  bucketFor,
  buildAllSeries,
  buildSeries,
  decimate,
  gpuIndices
} from '../gpu/series';
import { trans } from './helpers';
import { T0, reading, sample } from './fixtures';

describe('series', () => {
  it('makes one series per GPU with Date x values', () => {
    const samples = [
      sample(T0, [reading(0, { util_pct: 10 }), reading(1, { util_pct: 20 })]),
      sample(T0 + 10, [
        reading(0, { util_pct: 30 }),
        reading(1, { util_pct: 40 })
      ])
    ];
    const series = buildSeries(samples, 'util', 10);
    expect(series.map(s => s.gpuIndex)).toEqual([0, 1]);
    expect(series[0].x).toEqual([
      new Date(T0 * 1000),
      new Date((T0 + 10) * 1000)
    ]);
    expect(series[0].x[0]).toBeInstanceOf(Date);
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
    expect(gpu0.x[3]).toEqual(new Date((T0 + 60) * 1000));
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
});

describe('decimate', () => {
  const at = (s: number) => new Date(s * 1000);

  it('keeps the minimum and maximum of each time bucket, in time order', () => {
    const x = [0, 1, 2, 3, 4, 5, 6, 7].map(at);
    const y = [5, 9, 1, 5, 5, 2, 5, 8];
    const out = decimate(x, y, 4000);
    expect(out.y).toEqual([9, 1, 2, 8]);
    expect(out.x).toEqual([at(1), at(2), at(5), at(7)]);
  });

  it('keeps gaps (once) and does not bridge them', () => {
    const x = [0, 1, 2, 3, 4, 5].map(at);
    const y = [1, 2, null, null, 3, 4];
    const out = decimate(x, y, 10_000);
    expect(out.y).toEqual([1, 2, null, 3, 4]);
  });

  it('aligns buckets to time, so a sliding window keeps the same points', () => {
    const x = Array.from({ length: 40 }, (_, i) => at(i * 10));
    const y = x.map((_, i) => (i * 7) % 13);
    const a = decimate(x, y, 40_000);
    const b = decimate(x.slice(4), y.slice(4), 40_000);
    expect(b.y).toEqual(a.y.slice(a.y.length - b.y.length));
  });

  it('chooses buckets for about one point per pixel, none when short enough', () => {
    expect(bucketFor(720, 10, 200)).toBe(80_000);
    expect(bucketFor(150, 10, 200)).toBe(0);
    expect(bucketFor(720, 10, 0)).toBe(0);
  });
});
