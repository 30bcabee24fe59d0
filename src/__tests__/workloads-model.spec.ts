import { APIError } from '../api';
import { workloadsQueryString } from '../workloads/api';
import { statusClass, statusLabel } from '../common/status';
import {
  attemptReason,
  attemptsText,
  checkpointText,
  computeText,
  ordinal,
  queueShortText,
  queueText
} from '../workloads/format';
import { JobModel } from '../workloads/job-model';
import {
  ACTIVE_POLL_MS,
  IDLE_POLL_MS,
  WorkloadsModel
} from '../workloads/model';
import { workloadFromSearch } from '../workloads/url';
import { advance, expectNextCallAfter, trans } from './helpers';
import {
  FakeWorkloadsServer,
  QUEUE_REASON,
  T0_S,
  attempt,
  job,
  loose,
  queue,
  queuedJob,
  runningJob
} from './workloads-fixtures';

describe('workloads API and text', () => {
  it('says what an attempt resumed from, saved and restarted', () => {
    expect(checkpointText(trans, attempt(1))).toBe('');
    const resumed = attempt(2, {
      checkpoint: {
        restored: {
          attempt: 1,
          run_id: 'run1abc',
          saved_at: T0_S - 120,
          bytes: 2048,
          files: 1
        },
        saved: { bytes: 3 * 2 ** 20, files: 2, at: T0_S - 50, error: null },
        restarts: 1
      }
    });
    expect(checkpointText(trans, resumed)).toBe(
      'resumed from attempt 1 (1 file, 2.0 KiB) · saved 2 files, 3.0 MiB · 1 restart in place'
    );
  });

  it('builds list queries', () => {
    expect(
      workloadsQueryString({
        status: ['RUNNING', 'PENDING'],
        experiment: 'my exp',
        limit: 50,
        offset: 100
      })
    ).toBe('status=RUNNING%2CPENDING&experiment=my+exp&limit=50&offset=100');
    expect(workloadsQueryString({ limit: 50, offset: 0 })).toBe(
      'limit=50&offset=0'
    );
  });

  it('describes compute, statuses and attempt endings', () => {
    expect(
      computeText(trans, loose({ accelerator_type: 'CPU', num_nodes: 2 }))
    ).toBe('2 nodes x CPU');
    expect(
      computeText(
        trans,
        loose({ num_accelerators: 2, accelerator_type: 'H100' })
      )
    ).toBe('2 x H100');
    expect(computeText(trans, undefined)).toBe('1 x GPU');
    expect(statusClass('SUCCEEDED')).toBe('jp-air-status-finished');
    expect(statusClass('CANCELLED')).toBe('jp-air-status-killed');
    expect(statusClass('weird')).toBe('jp-air-status-other');
    expect(
      attemptReason(trans, attempt(1, { reason: 'node 1 exited with code 3' }))
    ).toBe('node 1 exited with code 3');
    expect(
      attemptReason(
        trans,
        attempt(1, { exit_code: null, signal: loose('SIGKILL') })
      )
    ).toBe('killed by SIGKILL');
    expect(attemptReason(trans, attempt(1, { timed_out: true }))).toBe(
      'timed out'
    );
    expect(attemptsText(trans, 2)).toBe('2 attempts');
    expect(attemptsText(trans, 1, true)).toBe('1 attempt');
    // a job that runs but whose first attempt is not recorded yet
    expect(attemptsText(trans, 0, true)).toBe('first attempt starting');
    expect(attemptsText(trans, 0)).toBe('0 attempts');
  });

  it("says a queued job run's status, place in line and why it waits", () => {
    expect(statusLabel(trans, 'QUEUED')).toBe('Queued');
    // its own colour: neither running nor pending
    expect(statusClass('QUEUED')).toBe('jp-air-status-queued');
    expect(statusClass('RUNNING')).toBe('jp-air-status-running');
    expect(statusClass('PENDING')).toBe('jp-air-status-scheduled');
    expect(
      [1, 2, 3, 4, 11, 12, 13, 21, 22, 103].map(n => ordinal(trans, n))
    ).toEqual([
      '1st',
      '2nd',
      '3rd',
      '4th',
      '11th',
      '12th',
      '13th',
      '21st',
      '22nd',
      '103rd'
    ]);
    expect(queueShortText(trans, queue())).toBe('Queued · 2nd of 3');
    expect(queueShortText(trans, queue({ position: 1, total: 1 }))).toBe(
      'Queued · 1st of 1'
    );
    expect(queueText(trans, queue())).toBe(
      `2nd in line of 3 — ${QUEUE_REASON}`
    );
    // what the server did not say (or said wrong) is left out
    expect(queueShortText(trans, queue({ total: loose(null) }))).toBe(
      'Queued · 2nd'
    );
    expect(queueText(trans, queue({ total: 1, reason: '' }))).toBe(
      '2nd in line'
    );
    expect(queueText(trans, queue({ position: loose('2') }))).toBe(
      QUEUE_REASON
    );
    expect(queueShortText(trans, queue({ position: 0 }))).toBe('Queued');
    expect(queueShortText(trans, null)).toBe('Queued');
    expect(queueText(trans, undefined)).toBe('');
    expect(queueText(trans, loose({ reason: 42 }))).toBe('');
  });

  it('reads the job run of the page URL', () => {
    expect(workloadFromSearch('?air-workload=3F2A9C1B0D4E')).toBe(
      '3f2a9c1b0d4e'
    );
    expect(workloadFromSearch('?foo=1&air-workload=3f2a9c1b0d4e&x')).toBe(
      '3f2a9c1b0d4e'
    );
    expect(workloadFromSearch('?air-workload=../../etc')).toBeNull();
    expect(workloadFromSearch('?air-workload=<img>')).toBeNull();
    expect(workloadFromSearch('')).toBeNull();
  });
});

describe('WorkloadsModel', () => {
  let server: FakeWorkloadsServer;
  let model: WorkloadsModel;

  beforeEach(() => {
    jest.useFakeTimers({ now: T0_S * 1000 });
    server = new FakeWorkloadsServer();
    model = new WorkloadsModel({
      fetchWorkloads: server.fetchWorkloads,
      pageSize: 10
    });
  });

  afterEach(() => {
    model.dispose();
    jest.useRealTimers();
  });

  it('asks nothing until started, then polls fast while a job run is active', async () => {
    server.jobs = [runningJob('aaaa00000001'), job('aaaa00000000')];
    await advance(60_000);
    expect(server.calls).toEqual([]);
    model.start();
    await advance(0);
    expect(server.calls).toHaveLength(1);
    expect(model.state).toBe('jobs');
    expect(model.hasActive).toBe(true);
    expect(model.nextDelay()).toBe(ACTIVE_POLL_MS);
    await advance(ACTIVE_POLL_MS);
    expect(server.calls).toHaveLength(2);

    // the job run ended: every 30 s from now on
    server.jobs = [job('aaaa00000001'), job('aaaa00000000')];
    await advance(ACTIVE_POLL_MS);
    expect(server.calls).toHaveLength(3);
    expect(model.hasActive).toBe(false);
    await expectNextCallAfter(() => server.calls.length, IDLE_POLL_MS);

    model.stop();
    await advance(10 * IDLE_POLL_MS);
    expect(server.calls).toHaveLength(4);
  });

  it('polls fast while a job run waits in its queue', async () => {
    server.jobs = [queuedJob('aaaa00000002'), job('aaaa00000000')];
    model.start();
    await advance(0);
    expect(model.hasActive).toBe(true);
    expect(model.nextDelay()).toBe(ACTIVE_POLL_MS);
    server.jobs[0] = queuedJob('aaaa00000002', {
      queue: queue({ position: 1, total: 2 })
    });
    await advance(ACTIVE_POLL_MS);
    expect(server.calls).toHaveLength(2);
    expect(model.jobs[0].queue?.position).toBe(1);

    // the ACTIVE filter asks for it too
    model.setStatusFilter('ACTIVE');
    await advance(0);
    expect(model.jobs.map(j => j.id)).toEqual(['aaaa00000002']);
    model.setStatusFilter('QUEUED');
    await advance(0);
    expect(server.calls[server.calls.length - 1].status).toEqual(['QUEUED']);
    expect(model.jobs.map(j => j.id)).toEqual(['aaaa00000002']);
  });

  it('sends the filters and starts again from the first page', async () => {
    server.jobs = Array.from({ length: 25 }, (_, i) =>
      job(`bbbb${String(i).padStart(8, '0')}`, {
        experiment_name: i % 2 ? 'odd' : 'even',
        status: i % 5 === 0 ? 'FAILED' : 'SUCCEEDED'
      })
    );
    model.start();
    await advance(0);
    expect(model.total).toBe(25);
    expect(model.jobs).toHaveLength(10);
    expect(model.hasNext).toBe(true);
    expect(model.hasPrevious).toBe(false);
    expect(model.experiments).toEqual(['even', 'odd']);

    model.nextPage();
    await advance(0);
    expect(server.calls[server.calls.length - 1].offset).toBe(10);
    model.nextPage();
    await advance(0);
    expect(model.offset).toBe(20);
    expect(model.jobs).toHaveLength(5);
    expect(model.hasNext).toBe(false);
    model.nextPage(); // nothing beyond
    await advance(0);
    expect(model.offset).toBe(20);

    model.setStatusFilter('FAILED');
    expect(model.offset).toBe(0);
    expect(model.state).toBe('loading');
    await advance(0);
    const last = server.calls[server.calls.length - 1];
    expect(last.status).toEqual(['FAILED']);
    expect(last.offset).toBe(0);
    expect(model.total).toBe(5);

    model.setExperiment('even');
    await advance(0);
    expect(server.calls[server.calls.length - 1].experiment).toBe('even');
    expect(model.jobs.every(j => j.experiment_name === 'even')).toBe(true);

    model.setStatusFilter('ACTIVE');
    await advance(0);
    expect(server.calls[server.calls.length - 1].status).toEqual([
      'PENDING',
      'QUEUED',
      'RUNNING'
    ]);
    expect(model.state).toBe('empty');
  });

  it('drops an answer to an older query', async () => {
    server.jobs = [job('cccc00000001', { experiment_name: 'a' })];
    let release: () => void = () => undefined;
    const slow = server.fetchWorkloads;
    let first = true;
    model.dispose();
    model = new WorkloadsModel({
      fetchWorkloads: async query => {
        if (first) {
          first = false;
          await new Promise<void>(resolve => (release = resolve));
        }
        return slow(query);
      }
    });
    model.start();
    await advance(0);
    const seen: string[] = [];
    model.changed.connect(() => seen.push(model.state));
    model.setExperiment('b');
    await advance(0);
    expect(model.state).toBe('loading');
    release(); // the unfiltered answer comes late: ignored, then the filtered one is asked
    await advance(0);
    expect(model.state).toBe('empty');
    expect(seen).not.toContain('jobs');
    expect(model.jobs).toEqual([]);
  });

  it('keeps the rows and says so when a refresh fails', async () => {
    server.jobs = [job('dddd00000001')];
    model.start();
    await advance(0);
    server.error = new APIError(500, 'boom');
    await model.refresh();
    expect(model.state).toBe('jobs');
    expect(model.error).toBe('boom (HTTP 500)');
  });
});

describe('JobModel', () => {
  let current: ReturnType<typeof job>;
  let calls: string[];
  let model: JobModel;

  beforeEach(() => {
    jest.useFakeTimers({ now: T0_S * 1000 });
    calls = [];
    current = runningJob('eeee00000001', { spec_yaml: 'command: x\n' });
    model = new JobModel({
      fetchJob: async id => {
        calls.push(`GET ${id}`);
        if (id !== current.id) {
          throw new APIError(404, `no job run ${id}`);
        }
        return current;
      },
      cancelJob: async id => {
        calls.push(`POST ${id}/cancel`);
        current = {
          ...current,
          status: 'CANCELLED',
          finished: true,
          ended_at: T0_S
        };
        const { spec_yaml, ...withoutYaml } = current;
        void spec_yaml;
        return withoutYaml;
      }
    });
  });

  afterEach(() => {
    model.dispose();
    jest.useRealTimers();
  });

  it('polls an active job run every 3 s while shown, and stops once it is over', async () => {
    model.setJob('eeee00000001');
    expect(model.state).toBe('loading');
    model.start();
    await advance(0);
    expect(model.state).toBe('job');
    expect(model.canCancel).toBe(true);
    await advance(3000);
    expect(calls).toEqual(['GET eeee00000001', 'GET eeee00000001']);
    current = job('eeee00000001');
    await advance(3000);
    expect(model.job?.status).toBe('SUCCEEDED');
    expect(model.canCancel).toBe(false);
    await advance(60_000);
    expect(calls).toHaveLength(3);
  });

  it('polls a queued job run and can cancel it', async () => {
    current = queuedJob('eeee00000001');
    model.setJob('eeee00000001');
    model.start();
    await advance(0);
    expect(model.job?.status).toBe('QUEUED');
    expect(model.canCancel).toBe(true);
    expect(model.nextDelay()).toBe(3000);
    await advance(3000);
    expect(calls).toEqual(['GET eeee00000001', 'GET eeee00000001']);
    // its turn came: still polled while it runs
    current = runningJob('eeee00000001');
    await advance(3000);
    expect(model.job?.status).toBe('RUNNING');
    expect(model.nextDelay()).toBe(3000);

    current = queuedJob('eeee00000001');
    await advance(3000);
    await model.cancel();
    expect(calls).toContain('POST eeee00000001/cancel');
    expect(model.job?.status).toBe('CANCELLED');
    expect(model.nextDelay()).toBeNull();
  });

  it('cancels (keeping the YAML) and reports a missing job run', async () => {
    model.setJob('eeee00000001');
    model.start();
    await advance(0);
    const done = model.cancel();
    expect(model.cancelling).toBe(true);
    expect(model.canCancel).toBe(false);
    await done;
    expect(calls).toContain('POST eeee00000001/cancel');
    expect(model.job?.status).toBe('CANCELLED');
    expect(model.job?.spec_yaml).toBe('command: x\n');
    expect(model.cancelling).toBe(false);

    model.setJob('ffff00000001');
    await advance(0);
    expect(model.state).toBe('not-found');
    expect(model.nextDelay()).toBeNull();
  });

  it('follows a cancellation the server is still carrying out (202) by polling', async () => {
    model.dispose();
    const asked = { ...current, cancel_requested: true };
    model = new JobModel({
      fetchJob: async id => {
        calls.push(`GET ${id}`);
        return current;
      },
      cancelJob: async id => {
        calls.push(`POST ${id}/cancel`);
        current = asked; // the supervisor stops the nodes meanwhile
        return asked;
      }
    });
    model.setJob('eeee00000001');
    model.start();
    await advance(0);
    await model.cancel();
    expect(model.job?.status).toBe('RUNNING');
    expect(model.cancelling).toBe(false);
    expect(model.canCancel).toBe(false); // asked once: the button stays off
    expect(model.nextDelay()).toBe(3000);
    current = { ...asked, status: 'CANCELLED', finished: true, ended_at: T0_S };
    await advance(3000);
    expect(model.job?.status).toBe('CANCELLED');
    expect(model.nextDelay()).toBeNull();
    expect(calls.filter(c => c.startsWith('POST'))).toEqual([
      'POST eeee00000001/cancel'
    ]);
  });
});
