/**
 * Fixed workloads API data (job runs, attempts, pages) and an in-memory logs server with the
 * real API's cursor rules, shared by the workloads and logs specs.
 */
import { APIError } from '../api';
import { ILogFilters, ILogsCursor } from '../logs/api';
import { ILogLine, ILogPage } from '../logs/types';
import { IWorkloadsQuery } from '../workloads/api';
import {
  IAttempt,
  IJob,
  IJobNode,
  IJobQueue,
  IWorkloadsPage,
  JobStatus,
  isActiveStatus
} from '../workloads/types';

/**
 * Data of a shape the server does not send (an older server, a hand-edited answer): views must
 * still show it.
 */
export function loose<T>(value: unknown): T {
  return value as T;
}

/** A base time (unix seconds) for the fixtures. */
export const T0_S = 1764410000;

const UI = '/user/alice/air/mlflow/';

/** A node process of an attempt (`exitCode` null: still running). */
export function node(
  n: number,
  pid: number,
  exitCode: number | null
): IJobNode {
  return {
    node: n,
    pid,
    gpus: null,
    exit_code: exitCode,
    signal: null,
    host: 'gpu-box',
    machine: null
  };
}

export function attempt(
  n: number,
  overrides: Partial<IAttempt> = {}
): IAttempt {
  const runId = `run${n}abc`;
  return {
    attempt: n,
    status: 'SUCCEEDED',
    reason: null,
    exit_code: 0,
    signal: null,
    timed_out: false,
    mlflow_run_id: runId,
    started_at: T0_S - 100,
    ended_at: T0_S - 40,
    duration_s: 60,
    backend: 'local',
    nodes: [node(0, 100 + n, 0), node(1, 200 + n, 0)],
    checkpoint: null,
    links: {
      run: `${UI}#/experiments/7/runs/${runId}?workflowType=machine_learning`,
      system_metrics: `${UI}#/experiments/7/runs/${runId}/system-metrics`,
      experiment: `${UI}#/experiments/7`
    },
    ...overrides
  };
}

export function job(id: string, overrides: Partial<IJob> = {}): IJob {
  return {
    id,
    status: 'SUCCEEDED',
    reason: null,
    queue: null,
    finished: true,
    experiment_name: 'demo',
    experiment_id: '7',
    run_name: `run-${id}`,
    command: 'python train.py',
    compute: {
      num_accelerators: 1,
      accelerator_type: 'CPU',
      num_nodes: 2,
      backend: null
    },
    backend: 'local',
    cluster: null,
    gpus: [],
    max_retries: 1,
    timeout_minutes: null,
    working_dir: '/home/ada',
    code: null,
    spec_path: '/home/ada/demo.yaml',
    source: 'cli',
    notebook: null,
    user: 'ada',
    schedule_id: null,
    schedule_name: null,
    submitted_at: T0_S - 120,
    started_at: T0_S - 100,
    ended_at: T0_S - 40,
    duration_s: 60,
    cancel_requested: false,
    logs_purged: false,
    supervisor_seen_at: null,
    supervisor_silent_s: null,
    warnings: [],
    attempts: [attempt(1)],
    links: {
      job: `/user/alice/lab?air-workload=${id}`,
      experiment: `${UI}#/experiments/7`
    },
    ...overrides
  };
}

/** A running job run (one attempt running). */
export function runningJob(id: string, overrides: Partial<IJob> = {}): IJob {
  return job(id, {
    status: 'RUNNING',
    finished: false,
    ended_at: null,
    duration_s: 100,
    attempts: [
      attempt(1, {
        status: 'RUNNING',
        ended_at: null,
        exit_code: null,
        nodes: [node(0, 101, null), node(1, 201, null)]
      })
    ],
    ...overrides
  });
}

/** Why the queued job run of `queuedJob` waits (as the server says it). */
export const QUEUE_REASON =
  '2nd in line, behind job run 3f2a91c0d4e1 (bob, submitted 14:02)';

/** A place in a Ray cluster's queue (2nd of 3 by default). */
export function queue(overrides: Partial<IJobQueue> = {}): IJobQueue {
  return {
    position: 2,
    total: 3,
    ahead: ['3f2a91c0d4e1'],
    reason: QUEUE_REASON,
    since: T0_S - 110,
    cluster: '10.0.0.5:6379',
    ...overrides
  };
}

/** A queued job run: submitted to a Ray cluster, waiting in its queue, no attempt yet. */
export function queuedJob(id: string, overrides: Partial<IJob> = {}): IJob {
  return job(id, {
    status: 'QUEUED',
    finished: false,
    backend: 'ray',
    cluster: '10.0.0.5:6379',
    started_at: null,
    ended_at: null,
    duration_s: null,
    attempts: [],
    queue: queue(),
    ...overrides
  });
}

/** Fake `air/api/workloads` list: serves `jobs` with the status/experiment filters and paging. */
export class FakeWorkloadsServer {
  jobs: IJob[] = [];
  calls: IWorkloadsQuery[] = [];
  error: Error | null = null;

  fetchWorkloads = async (query: IWorkloadsQuery): Promise<IWorkloadsPage> => {
    this.calls.push({ ...query, status: [...(query.status ?? [])] });
    if (this.error) {
      throw this.error;
    }
    const matching = this.jobs.filter(
      j =>
        (!query.status?.length || query.status.includes(String(j.status))) &&
        (!query.experiment || j.experiment_name === query.experiment)
    );
    return {
      workloads: matching.slice(query.offset, query.offset + query.limit),
      total: matching.length,
      limit: query.limit,
      offset: query.offset
    };
  };
}

/** A log line of attempt/node with index `i` (its pos is the boundary after it). */
export function logLine(
  i: number,
  overrides: Partial<ILogLine> = {},
  attemptNo = 1,
  node = 0
): ILogLine {
  return {
    t: new Date((T0_S + i) * 1000).toISOString(),
    node,
    attempt: attemptNo,
    stream: 'stdout',
    level: 'info',
    text: `line ${i}`,
    pos: `${attemptNo}:${node}:${i + 1}`,
    ...overrides
  };
}

/** A call to the fake logs server. */
export interface ILogsCall {
  filters: ILogFilters;
  cursor: ILogsCursor;
  signal?: AbortSignal;
}

function abortError(): Error {
  const error = new Error('aborted');
  error.name = 'AbortError';
  return error;
}

/**
 * An in-memory logs API with the real one's cursor rules (`a:n:i`, `i` lines before), for one
 * node and attempt: `tail`, `before`, `after`, filters by level and text, `more`, `complete`, and
 * long-polls that wait for `write()` (or the request's abort).
 */
export class FakeLogsServer {
  constructor(count = 0) {
    for (let i = 0; i < count; i++) {
      this.lines.push(logLine(i));
    }
  }

  lines: ILogLine[] = [];
  calls: ILogsCall[] = [];
  status: JobStatus = 'SUCCEEDED';
  attempts = 1;
  purged = false;
  error: Error | null = null;
  /** Long-polls waiting for lines. */
  waiting = 0;

  /** Whether nothing more will be written. */
  get finished(): boolean {
    return !isActiveStatus(this.status);
  }

  /** Append lines (the job wrote them): waiting long-polls answer. */
  write(texts: (string | Partial<ILogLine>)[]): void {
    for (const text of texts) {
      const i = this.lines.length;
      this.lines.push(logLine(i, typeof text === 'string' ? { text } : text));
    }
    const wake = this._wake;
    this._wake = [];
    wake.forEach(w => w());
  }

  /** The job ended: waiting long-polls answer. */
  finish(status: JobStatus = 'SUCCEEDED'): void {
    this.status = status;
    this.write([]);
  }

  private _matches(line: ILogLine, filters: ILogFilters): boolean {
    if (
      filters.levels.length > 0 &&
      filters.levels.length < 3 &&
      !filters.levels.includes(line.level as any)
    ) {
      return false;
    }
    return (
      !filters.q || line.text.toLowerCase().includes(filters.q.toLowerCase())
    );
  }

  private _index(cursor: string): number {
    const parts = cursor.split(':');
    return Number(parts[2]);
  }

  private _page(
    lines: ILogLine[],
    next: number,
    prev: number | null,
    more: boolean
  ): ILogPage {
    return {
      job_id: 'abc123def456',
      node: 0,
      attempt: this.attempts,
      lines,
      next: `1:0:${next}`,
      prev: prev === null || prev <= 0 ? null : `1:0:${prev}`,
      more,
      complete: this.finished && !more,
      purged: this.purged,
      job_status: this.status,
      attempts: this.attempts
    };
  }

  fetchLogs = async (
    jobId: string,
    filters: ILogFilters,
    cursor: ILogsCursor,
    signal?: AbortSignal
  ): Promise<ILogPage> => {
    this.calls.push({ filters: { ...filters }, cursor: { ...cursor }, signal });
    await Promise.resolve();
    if (this.error) {
      throw this.error;
    }
    const indexed = this.lines
      .map((line, i) => [line, i] as [ILogLine, number])
      .filter(([line]) => this._matches(line, filters));
    if (cursor.tail || cursor.before !== undefined) {
      const end =
        cursor.before !== undefined
          ? this._index(cursor.before)
          : this.lines.length;
      const before = indexed.filter(([, i]) => i < end);
      const picked = before.slice(-cursor.limit);
      const start = picked.length ? picked[0][1] : end;
      const more = before.length > picked.length;
      const page = this._page(
        picked.map(([line]) => line),
        cursor.tail ? this.lines.length : end,
        more || start > 0 ? start : null,
        more
      );
      // as the server: the tail of a finished log is complete, a page before a cursor never
      page.complete = cursor.before === undefined && this.finished;
      return page;
    }
    const from = cursor.after !== undefined ? this._index(cursor.after) : 0;
    let after = indexed.filter(([, i]) => i >= from);
    if (after.length === 0 && cursor.wait && !this.finished) {
      this.waiting++;
      try {
        await new Promise<void>((resolve, reject) => {
          this._wake.push(resolve);
          signal?.addEventListener('abort', () => reject(abortError()));
        });
      } finally {
        this.waiting--;
      }
      after = this.lines
        .map((line, i) => [line, i] as [ILogLine, number])
        .filter(([line, i]) => i >= from && this._matches(line, filters));
    }
    const picked = after.slice(0, cursor.limit);
    const more = after.length > picked.length;
    const next = more ? picked[picked.length - 1][1] + 1 : this.lines.length;
    return this._page(
      picked.map(([line]) => line),
      next,
      picked.length && picked[0][1] > 0 ? picked[0][1] : null,
      more
    );
  };

  /** A 403 as the server sends it. */
  static forbidden(): APIError {
    return new APIError(
      403,
      "You don't have access to these logs. Ask your administrator for the air-logs permission."
    );
  }

  private _wake: (() => void)[] = [];
}
