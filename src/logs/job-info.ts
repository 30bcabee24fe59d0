/**
 * What a Logs view knows of the job run whose logs it shows: its status, attempts and node count
 * (for the node and attempt choices and the status line), from the log pages' answers and from
 * `GET air/api/workloads/{id}`, read again when a page says the status changed.
 */
import { nodeCount } from '../workloads/format';
import { IJob } from '../workloads/types';
import { ILogPage } from './types';

/** Calls `GET air/api/workloads/{id}`. */
export type JobFetcher = (id: string) => Promise<IJob>;

export class LogsJobInfo {
  /** `changed`: called when the job run was read (new attempts, ended times). */
  constructor(jobId: string, fetchJob: JobFetcher, changed: () => void) {
    this._jobId = jobId;
    this._fetchJob = fetchJob;
    this._changed = changed;
  }

  /** The job run, `null` until read. */
  get job(): IJob | null {
    return this._job;
  }

  /** How many nodes the job run has. */
  get nodes(): number {
    return nodeCount(this._job);
  }

  /** How many attempts the job run has so far. */
  get attempts(): number {
    const fromJob = Array.isArray(this._job?.attempts)
      ? this._job!.attempts.length
      : 0;
    return Math.max(fromJob, this._attempts);
  }

  /** The job run's status, as the last answer said. */
  get status(): string {
    return this._status || String(this._job?.status ?? '');
  }

  /** The attempt the last page read. */
  get attempt(): number {
    return this._attempt;
  }

  /** Whether the logs were purged (as the last page said). */
  get purged(): boolean {
    return this._purged;
  }

  /** Take what a page says; with `reload`, a new status reads the job run again. */
  notePage(page: ILogPage, reload: boolean): void {
    if (typeof page.job_status === 'string' && page.job_status) {
      const changed = page.job_status !== this._status;
      this._status = page.job_status;
      if (changed && this._job !== null && reload) {
        void this.load();
      }
    }
    if (typeof page.attempts === 'number') {
      this._attempts = page.attempts;
    }
    if (typeof page.attempt === 'number') {
      this._attempt = page.attempt;
    }
    this._purged = page.purged === true;
  }

  /** Read the job run (a failure leaves what the pages said: status, attempts, one node). */
  async load(): Promise<void> {
    try {
      const job = await this._fetchJob(this._jobId);
      if (!this._isDisposed) {
        this._job = job;
        this._changed();
      }
    } catch {
      // the page answers say enough (status, attempts); the node count stays 1
    }
  }

  dispose(): void {
    this._isDisposed = true;
  }

  private readonly _jobId: string;
  private readonly _fetchJob: JobFetcher;
  private readonly _changed: () => void;
  private _job: IJob | null = null;
  private _status = '';
  private _attempts = 0;
  private _attempt = 0;
  private _purged = false;
  private _isDisposed = false;
}
