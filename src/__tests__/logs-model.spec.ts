import { APIError } from '../api';
import { defaultFilters, logsQueryString } from '../logs/api';
import { LogsModel } from '../logs/model';
import { advance, expectNoCallFor } from './helpers';
import { FakeLogsServer, T0_S, runningJob } from './workloads-fixtures';

describe('logs API', () => {
  it('builds page queries with the filters and the cursor', () => {
    expect(logsQueryString(defaultFilters(), { tail: true, limit: 1000 })).toBe(
      'node=0&tail=1&limit=1000'
    );
    expect(
      logsQueryString(
        {
          node: 1,
          attempt: 2,
          levels: ['warning', 'error'],
          q: 'out of memory',
          since: 1764410000,
          until: 1764410060.5
        },
        { after: '2:1:300', limit: 500, wait: 25 }
      )
    ).toBe(
      'node=1&attempt=2&level=warning%2Cerror&q=out+of+memory&since=1764410000&until=1764410060.5&after=2%3A1%3A300&limit=500&wait=25'
    );
    // every level (or none) is no level filter
    expect(
      logsQueryString(
        { ...defaultFilters(), levels: [] },
        { before: '1:0:9', limit: 10 }
      )
    ).toBe('node=0&before=1%3A0%3A9&limit=10');
  });
});

describe('LogsModel', () => {
  let server: FakeLogsServer;
  let model: LogsModel;

  function create(options: Partial<LogsModel.IOptions> = {}): LogsModel {
    return new LogsModel({
      jobId: 'abc123def456',
      fetchLogs: server.fetchLogs,
      fetchJob: async () => runningJob('abc123def456'),
      pageSize: 100,
      maxLines: 300,
      retryMs: 1000,
      ...options
    });
  }

  /** A running job run's server with `lines` lines written so far. */
  function runningServer(lines?: number): FakeLogsServer {
    const running = new FakeLogsServer(lines);
    running.status = 'RUNNING';
    return running;
  }

  /** The model of `server`'s job run, started, once its first answers are in. */
  async function startModel(): Promise<void> {
    model = create();
    model.start();
    await advance(0);
  }

  const calls = () => server.calls.length;

  beforeEach(() => {
    jest.useFakeTimers({ now: T0_S * 1000 });
  });

  afterEach(() => {
    model.dispose();
    jest.useRealTimers();
  });

  it('opens on the tail of node 0 of the latest attempt, and loads older pages', async () => {
    server = new FakeLogsServer(250);
    model = create();
    expect(model.state).toBe('loading');
    await advance(0);
    expect(server.calls).toEqual([]); // nothing before it is shown
    model.start();
    await advance(0);
    expect(server.calls[0].cursor).toEqual({ tail: true, limit: 100 });
    expect(server.calls[0].filters).toEqual(defaultFilters());
    expect(model.state).toBe('lines');
    expect(model.lines.map(l => l.text)[0]).toBe('line 150');
    expect(model.lines).toHaveLength(100);
    expect(model.complete).toBe(true);
    expect(model.hasOlder).toBe(true);
    expect(model.nodes).toBe(2); // from the job run

    const changes: string[] = [];
    model.changed.connect((_, change) =>
      changes.push(`${change.kind}:${change.added}`)
    );
    await model.loadOlder();
    expect(server.calls[1].cursor).toEqual({ before: '1:0:150', limit: 100 });
    expect(model.lines).toHaveLength(200);
    expect(model.lines[0].text).toBe('line 50');
    expect(changes).toContain('prepend:100');
    await model.loadOlder();
    expect(model.lines[0].text).toBe('line 0');
    expect(model.hasOlder).toBe(false);
    await model.loadOlder(); // nothing more
    expect(server.calls).toHaveLength(3);
    // a finished job run is not followed
    await advance(60_000);
    expect(server.calls).toHaveLength(3);
  });

  it('keeps at most maxLines, dropping the newest when loading older ones', async () => {
    server = new FakeLogsServer(1000);
    await startModel();
    for (let i = 0; i < 4; i++) {
      await model.loadOlder();
    }
    expect(model.lines).toHaveLength(300);
    expect(model.lines[0].text).toBe('line 500');
    expect(model.lines[299].text).toBe('line 799');
    expect(model.hasNewer).toBe(true);
    expect(model.complete).toBe(false);
    // at the bottom: the next page, not following
    model.pause();
    model.reachedBottom();
    await advance(0);
    const last = server.calls[server.calls.length - 1];
    expect(last.cursor).toEqual({ after: '1:0:800', limit: 100 });
    expect(model.lines[model.lines.length - 1].text).toBe('line 899');
    expect(model.lines).toHaveLength(300);
    expect(model.lines[0].text).toBe('line 600');
  });

  it('follows a running job with long-polls, until it ends', async () => {
    server = runningServer(10);
    await startModel();
    expect(model.live).toBe(true);
    expect(model.following).toBe(true);
    expect(server.calls[1].cursor).toEqual({
      after: '1:0:10',
      limit: 100,
      wait: 25
    });
    expect(server.waiting).toBe(1);

    server.write(['epoch 1', 'epoch 2']);
    await advance(0);
    expect(model.lines.map(l => l.text).slice(-2)).toEqual([
      'epoch 1',
      'epoch 2'
    ]);
    expect(server.calls[2].cursor.after).toBe('1:0:12');

    server.finish('SUCCEEDED');
    await advance(0);
    expect(model.complete).toBe(true);
    expect(model.following).toBe(false);
    expect(model.jobStatus).toBe('SUCCEEDED');
    await expectNoCallFor(calls, 60_000);
  });

  it('stops following while hidden or paused, and resumes from where it was', async () => {
    server = runningServer(5);
    await startModel();
    const poll = server.calls[1];
    expect(poll.signal?.aborted).toBe(false);

    model.stop();
    await advance(0);
    expect(poll.signal?.aborted).toBe(true);
    expect(server.waiting).toBe(0);
    server.write(['while hidden']);
    await advance(60_000);
    expect(server.calls).toHaveLength(2);

    model.start();
    await advance(0);
    expect(server.calls[2].cursor.after).toBe('1:0:5');
    expect(model.lines[model.lines.length - 1].text).toBe('while hidden');

    // the user scrolled up
    model.pause();
    expect(model.paused).toBe(true);
    expect(model.following).toBe(false);
    await advance(0);
    const count = server.calls.length;
    server.write(['while paused']);
    await advance(60_000);
    expect(server.calls).toHaveLength(count);
    expect(model.lines[model.lines.length - 1].text).toBe('while hidden');

    model.resume();
    await advance(0);
    expect(model.paused).toBe(false);
    expect(model.lines[model.lines.length - 1].text).toBe('while paused');
    expect(model.following).toBe(true);
  });

  it('drops the oldest lines while following past maxLines', async () => {
    server = runningServer(250);
    await startModel();
    expect(model.lines).toHaveLength(100);
    server.write(Array.from({ length: 250 }, (_, i) => `new ${i}`));
    // three pages: the long-poll held answers, then each next one goes out on the poll's
    // immediate tick (a zero-delay timer, which fake timers run a millisecond later)
    await advance(0);
    await advance(1);
    await advance(1);
    expect(model.lines).toHaveLength(300);
    expect(model.lines[299].text).toBe('new 249');
    expect(model.lines[0].text).toBe('line 200');
    // the lines dropped can be read again
    await model.loadOlder();
    const last = server.calls[server.calls.length - 1];
    expect(last.cursor.before).toBe('1:0:200');
  });

  it('reads again from the tail when a filter changes', async () => {
    server = runningServer();
    for (let i = 0; i < 50; i++) {
      server.lines.push({
        ...server.lines[0],
        ...{
          t: new Date((T0_S + i) * 1000).toISOString(),
          text: i % 10 === 0 ? `ERROR loss is nan ${i}` : `step ${i}`,
          level: i % 10 === 0 ? 'error' : 'info',
          pos: `1:0:${i + 1}`,
          node: 0,
          attempt: 1,
          stream: 'stdout'
        }
      });
    }
    await startModel();
    const poll = server.calls[1];
    const resets: number[] = [];
    model.changed.connect((_, change) => {
      if (change.kind === 'reset') {
        resets.push(model.lines.length);
      }
    });
    model.setFilters({ q: 'NaN' });
    expect(poll.signal?.aborted).toBe(true);
    expect(model.state).toBe('loading');
    await advance(0);
    const tail = server.calls[2];
    expect(tail.cursor).toEqual({ tail: true, limit: 100 });
    expect(tail.filters.q).toBe('NaN');
    expect(model.lines.map(l => l.text)).toEqual(
      [0, 10, 20, 30, 40].map(i => `ERROR loss is nan ${i}`)
    );
    expect(model.isFiltered).toBe(true);
    expect(resets).toEqual([0, 5]);
    // following goes on with the filter
    expect(server.calls[3].filters.q).toBe('NaN');

    model.toggleLevel('info');
    await advance(0);
    expect(server.calls[server.calls.length - 2].filters.levels).toEqual([
      'warning',
      'error'
    ]);
    model.setFilters({ q: 'nothing like this' });
    await advance(0);
    expect(model.state).toBe('empty');
    model.setFilters({
      node: 1,
      attempt: 1,
      q: '',
      levels: ['info', 'warning', 'error']
    });
    await advance(0);
    const last = server.calls.filter(c => c.cursor.tail).pop()!;
    expect(last.filters).toMatchObject({ node: 1, attempt: 1 });
  });

  it('stops on a 403 and keeps the server message', async () => {
    server = runningServer(10);
    server.error = FakeLogsServer.forbidden();
    await startModel();
    expect(model.state).toBe('forbidden');
    expect(model.error).toBe(
      "You don't have access to these logs. Ask your administrator for the air-logs permission."
    );
    await advance(60_000);
    expect(server.calls).toHaveLength(1);
  });

  it('says when the logs were purged', async () => {
    server = new FakeLogsServer(0);
    server.purged = true;
    await startModel();
    expect(model.state).toBe('purged');
    expect(model.purged).toBe(true);
  });

  it('retries after a failure, and a bad filter is an error until changed', async () => {
    server = new FakeLogsServer(10);
    server.error = new APIError(502, 'bad gateway');
    await startModel();
    expect(model.state).toBe('error');
    expect(model.error).toBe('bad gateway (HTTP 502)');
    server.error = null;
    await advance(1000);
    expect(model.state).toBe('lines');

    server.error = new APIError(400, "bad level 'x'");
    model.setFilters({ q: 'x' });
    await advance(0);
    expect(model.state).toBe('error');
    await expectNoCallFor(calls, 10_000);
  });

  it('keeps following through a failed poll', async () => {
    server = runningServer(3);
    await startModel();
    model.stop();
    server.error = new APIError(500, 'oops');
    model.start();
    await advance(0);
    expect(model.state).toBe('lines');
    expect(model.error).toBe('oops (HTTP 500)');
    server.error = null;
    server.write(['after the failure']);
    await advance(1000);
    expect(model.lines[model.lines.length - 1].text).toBe('after the failure');
    expect(model.error).toBeNull();
  });
});
