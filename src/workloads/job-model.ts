/**
 * The state of a job run's page, without any DOM: the job run (with its YAML), polled every 3 s
 * while it is active (pending, queued or running) and the page is shown (backing off while the
 * server fails), and its cancellation.
 */
import { APIError, describeError } from '../api';
import { PolledModel } from '../common/polled-model';
import { cancelJob, fetchJob } from './api';
import { IJob, isActiveStatus } from './types';

/** Poll cadence of an active job run's page (ms). */
export const JOB_POLL_MS = 3000;

/** What the job page shows. */
export type JobPageState = 'none' | 'loading' | 'not-found' | 'error' | 'job';

export type JobFetcher = (id: string) => Promise<IJob>;

export class JobModel extends PolledModel {
  constructor(options: JobModel.IOptions = {}) {
    super('jupyter-air:job-run');
    this._fetchJob = options.fetchJob ?? fetchJob;
    this._cancelJob = options.cancelJob ?? cancelJob;
  }

  /** The id of the job run shown, `null` when none is. */
  get jobId(): string | null {
    return this._id;
  }

  /** The job run, `null` before the first answer. */
  get job(): IJob | null {
    return this._job;
  }

  get state(): JobPageState {
    if (this._id === null) {
      return 'none';
    }
    if (this._notFound) {
      return 'not-found';
    }
    if (this._job === null) {
      return this._error !== null ? 'error' : 'loading';
    }
    return 'job';
  }

  /** Whether a cancellation is in flight. */
  get cancelling(): boolean {
    return this._cancelling;
  }

  /** Why the last cancellation failed, `null` when it did not. */
  get cancelError(): string | null {
    return this._cancelError;
  }

  /** Whether the job run can be cancelled now (not finished, not already being cancelled). */
  get canCancel(): boolean {
    const job = this._job;
    return (
      job !== null &&
      !job.finished &&
      isActiveStatus(job.status) &&
      !job.cancel_requested &&
      !this._cancelling
    );
  }

  /** Milliseconds until the next poll while shown; `null` once the job run is over. */
  nextDelay(): number | null {
    if (this._id === null) {
      return null;
    }
    if (this._job === null) {
      return this._notFound ? null : JOB_POLL_MS;
    }
    return this._job.finished && !isActiveStatus(this._job.status)
      ? null
      : JOB_POLL_MS;
  }

  /** Show a job run (`null`: none, back to the list). */
  setJob(id: string | null): void {
    const next = id || null;
    if (next === this._id) {
      if (next !== null) {
        this.refreshIfShown();
      }
      return;
    }
    this._id = next;
    this._job = null;
    this._error = null;
    this._notFound = false;
    this._cancelError = null;
    this._cancelling = false;
    this._changed.emit();
    this.refreshIfShown();
  }

  /**
   * Cancel the job run (the caller asked for confirmation). Resolves once the server took the
   * request (202, the job run still stopping: the poll follows it until it is over).
   */
  async cancel(): Promise<void> {
    const id = this._id;
    if (id === null || !this.canCancel) {
      return;
    }
    this._cancelling = true;
    this._cancelError = null;
    this._changed.emit();
    try {
      const job = await this._cancelJob(id);
      if (this.isDisposed || id !== this._id) {
        return;
      }
      if (job && typeof job.id === 'string') {
        this._job = {
          ...job,
          spec_yaml: job.spec_yaml ?? this._job?.spec_yaml
        };
      }
    } catch (error) {
      if (this.isDisposed || id !== this._id) {
        return;
      }
      this._cancelError = describeError(error);
    }
    this._cancelling = false;
    this._changed.emit();
    this.refreshIfShown();
  }

  protected queryKey(): string {
    return this._id ?? '';
  }

  protected async poll(): Promise<void> {
    const id = this._id;
    if (this.isDisposed || id === null) {
      return;
    }
    let job: IJob | null;
    try {
      job = await this.answer(() => this._fetchJob(id));
    } catch (error) {
      this._notFound = error instanceof APIError && error.status === 404;
      if (this._notFound) {
        this._changed.emit();
        return; // a job run that is gone is not asked again
      }
      throw error;
    }
    if (job !== null) {
      this._job = job;
      this._notFound = false;
      this._changed.emit();
    }
  }

  private readonly _fetchJob: JobFetcher;
  private readonly _cancelJob: JobFetcher;
  private _id: string | null = null;
  private _job: IJob | null = null;
  private _notFound = false;
  private _cancelling = false;
  private _cancelError: string | null = null;
}

export namespace JobModel {
  export interface IOptions {
    /** Calls `GET air/api/workloads/{id}`; defaults to the real server. */
    fetchJob?: JobFetcher;
    /** Calls `POST air/api/workloads/{id}/cancel`; defaults to the real server. */
    cancelJob?: JobFetcher;
  }
}
