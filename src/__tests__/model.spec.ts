import { APIError } from '../api';
import { mergeSamples, trimSamples } from '../gpu/history';
import { GpuModel } from '../gpu/model';
import { FakeServer, T0, oneNode, payload, reading, sample } from './fixtures';
import { advance, expectNextCallAfter, expectNoCallFor } from './helpers';

describe('mergeSamples / trimSamples', () => {
  it('appends newer samples, de-duplicates by t (newest copy wins) and sorts', () => {
    const a = [sample(10), sample(20), sample(30)];
    const replacement = sample(20, [reading(0, { util_pct: 1 })]);
    const merged = mergeSamples(a, [sample(5), replacement, sample(40)]);
    expect(merged.map(s => s.t)).toEqual([5, 10, 20, 30, 40]);
    expect(merged[2]).toBe(replacement);
    expect(mergeSamples(a, [sample(40)]).map(s => s.t)).toEqual([
      10, 20, 30, 40
    ]);
  });

  it('trims to the window before the newest sample', () => {
    const samples = [0, 100, 200, 300, 400].map(t => sample(t));
    expect(trimSamples(samples, 250).map(s => s.t)).toEqual([200, 300, 400]);
    expect(trimSamples(samples, 1000)).toBe(samples);
  });
});

describe('GpuModel', () => {
  let server: FakeServer;
  let model: GpuModel;

  beforeEach(() => {
    jest.useFakeTimers({ now: T0 * 1000 });
    server = new FakeServer();
    model = new GpuModel(server.options);
  });
  const calls = () => server.calls.length;

  afterEach(() => {
    model.dispose();
    jest.useRealTimers();
  });

  it('fetches the whole window first, then deltas since the newest sample, merged', async () => {
    // history the server already has before the panel opens
    server.history = [sample(T0 - 20), sample(T0 - 10)];
    expect(model.status).toBe('loading');
    model.start();
    await advance(0);
    expect(server.calls).toEqual([{ since: null, refresh: false, node: null }]);
    expect(model.status).toBe('live');
    expect(model.samples.map(s => s.t)).toEqual([T0 - 20, T0 - 10, T0]);

    await advance(10_000);
    expect(server.calls[1]).toEqual({ since: T0, refresh: false, node: null });
    expect(model.samples.map(s => s.t)).toEqual([
      T0 - 20,
      T0 - 10,
      T0,
      T0 + 10
    ]);
  });

  it('does not duplicate samples the server sends twice', async () => {
    const first = [sample(T0 - 10), sample(T0)];
    const answers = [
      payload({ samples: first, latest: first[1] }),
      // overlapping delta: T0 again (updated) and a new one
      payload({
        samples: [sample(T0, [reading(0, { util_pct: 3 })]), sample(T0 + 10)],
        latest: sample(T0 + 10)
      })
    ];
    model.dispose();
    model = new GpuModel({
      fetch: async () => answers.shift()!,
      fetchOverview: oneNode
    });
    model.start();
    await advance(0);
    await advance(10_000);
    expect(model.samples.map(s => s.t)).toEqual([T0 - 10, T0, T0 + 10]);
    expect(model.samples[1].gpus?.[0].util_pct).toBe(3);
  });

  it('trims the history to history_s before the newest sample', async () => {
    server.meta = { history_s: 30 };
    server.history = [0, 10, 20, 30, 40].map(d => sample(T0 - 100 + d));
    model.start();
    await advance(0);
    // newest is T0: keep T0-30 .. T0
    expect(model.samples.map(s => s.t)).toEqual([T0]);
    await advance(10_000);
    await advance(10_000);
    await advance(10_000);
    await advance(10_000);
    expect(model.samples.map(s => s.t - T0)).toEqual([10, 20, 30, 40]);
  });

  it('polls every interval_s while started, and not at all while stopped', async () => {
    server.meta = { interval_s: 5 };
    model.start();
    await advance(0);
    expect(server.calls).toHaveLength(1);
    await expectNextCallAfter(calls, 5_000);
    await advance(20_000);
    expect(server.calls).toHaveLength(6);

    model.stop();
    await expectNoCallFor(calls, 120_000);

    // reopening the panel fetches at once and polls again
    model.start();
    await advance(0);
    expect(server.calls).toHaveLength(7);
    expect(server.calls[6].since).toBe(
      model.samples[model.samples.length - 2].t
    );
    await advance(5_000);
    expect(server.calls).toHaveLength(8);
  });

  it('uses the default 10 s interval until the server says otherwise', async () => {
    server.failNext = new Error('offline');
    model.start();
    await advance(0);
    expect(server.calls).toHaveLength(1);
    await expectNextCallAfter(calls, 10_000);
  });

  it('pauses after idle_timeout_s without activity and sends nothing more', async () => {
    server.meta = { idle_timeout_s: 60 };
    const statuses: string[] = [];
    model.changed.connect(() => statuses.push(model.status));
    model.start();
    await advance(0);
    await advance(59_000);
    expect(model.status).toBe('live');
    expect(server.calls).toHaveLength(6); // t = 0, 10, ..., 50
    await advance(1_000);
    expect(model.status).toBe('paused');
    expect(statuses[statuses.length - 1]).toBe('paused');
    await expectNoCallFor(calls, 600_000);
    expect(server.calls).toHaveLength(6);
    expect(model.status).toBe('paused');
  });

  it('does not pause while the user is active', async () => {
    server.meta = { idle_timeout_s: 60 };
    model.start();
    await advance(0);
    for (let i = 0; i < 10; i++) {
      await advance(30_000);
      model.noteActivity();
    }
    expect(model.status).toBe('live');
    expect(server.calls).toHaveLength(31); // every 10 s for 300 s, plus the first
  });

  it('resume() fetches at once and polls again', async () => {
    server.meta = { idle_timeout_s: 60 };
    model.start();
    await advance(60_000);
    expect(model.status).toBe('paused');
    const before = server.calls.length;
    model.resume();
    await advance(0);
    expect(server.calls).toHaveLength(before + 1);
    expect(model.status).toBe('live');
    await advance(10_000);
    expect(server.calls).toHaveLength(before + 2);
  });

  it('closing and reopening the panel leaves the pause', async () => {
    server.meta = { idle_timeout_s: 60 };
    model.start();
    await advance(60_000);
    expect(model.status).toBe('paused');
    model.stop();
    model.start();
    await advance(0);
    expect(model.status).toBe('live');
  });

  it('refresh() POSTs with since and merges the answer', async () => {
    model.start();
    await advance(0);
    await advance(3_000);
    await model.refresh();
    expect(server.calls[1]).toEqual({ since: T0, refresh: true, node: null });
    expect(model.samples.map(s => s.t - T0)).toEqual([0, 3]);
    // the next poll is one interval after the refresh
    expect(server.calls).toHaveLength(2);
    await expectNextCallAfter(calls, 10_000);
  });

  it('shows an error, keeps the data, and recovers on the next poll', async () => {
    model.start();
    await advance(0);
    server.failNext = new APIError(403, 'Forbidden: air-gpu');
    await advance(10_000);
    expect(model.status).toBe('error');
    expect(model.error).toContain('Forbidden: air-gpu');
    expect(model.samples).toHaveLength(1);
    await advance(10_000);
    expect(model.status).toBe('live');
    expect(model.error).toBeNull();
    expect(model.samples).toHaveLength(2);
  });

  it('computes the age of the newest sample from server time plus elapsed time', async () => {
    model.dispose();
    // server clock is 1000 s ahead of ours: must not matter
    model = new GpuModel({
      fetch: async () =>
        payload({ now: T0 + 1000, latest: sample(T0 + 1000 - 4) }),
      fetchOverview: oneNode
    });
    expect(model.secondsSinceUpdate()).toBeNull();
    model.start();
    await advance(0);
    expect(model.secondsSinceUpdate()).toBeCloseTo(4);
    await advance(3_000);
    expect(model.secondsSinceUpdate()).toBeCloseTo(7);
  });

  it('pauses at the idle deadline, not an interval late, and leaves no timer behind', async () => {
    const calls: number[] = [];
    model.dispose();
    model = new GpuModel({
      fetch: async () => {
        calls.push(Date.now() - T0 * 1000);
        return payload({ idle_timeout_s: 25, interval_s: 10 });
      },
      fetchOverview: oneNode
    });
    model.start();
    await advance(0);
    expect(calls).toEqual([0]);
    expect(jest.getTimerCount()).toBe(1); // the next poll, and nothing else
    await advance(9_999);
    expect(calls).toEqual([0]);
    await advance(1);
    await advance(10_000);
    expect(calls).toEqual([0, 10_000, 20_000]);
    // next: the idle deadline (25 s after start), before the next poll (30 s)
    await advance(4_999);
    expect(model.status).toBe('live');
    await advance(1);
    expect(model.status).toBe('paused');
    expect(calls).toHaveLength(3);
    expect(jest.getTimerCount()).toBe(0);
  });
});
