/**
 * The Workloads panel's list state, without any DOM: which job runs it shows (status and
 * experiment filters, one page of them), and when to ask again.
 *
 * - The filters and the page go to the server (`workloads?status=…&experiment=…&limit&offset`),
 *   which answers newest first with the total, so thousands of job runs page cheaply.
 * - While started (the list is shown) it polls: every 3 s while a job run shown is active
 *   (PENDING, QUEUED or RUNNING: statuses, places in line and durations stay live), else every
 *   30 s (backing off while the server fails). Stopped (hidden), nothing is sent.
 * - An answer to an older query (the user changed a filter or the page meanwhile) is dropped.
 */
import { PolledModel } from '../common/polled-model';
import { IWorkloadsQuery, fetchWorkloads } from './api';
import {
  ACTIVE_STATUSES,
  IJob,
  IWorkloadsPage,
  JOB_STATUSES,
  isActiveStatus
} from './types';

/** Poll cadence (ms). */
export const ACTIVE_POLL_MS = 3000;
export const IDLE_POLL_MS = 30000;

/** Job runs per page. */
export const PAGE_SIZE = 50;

/** The status filter: every job run, the active ones (pending, queued, running), or one status. */
export type WorkloadsStatusFilter =
  'ALL' | 'ACTIVE' | (typeof JOB_STATUSES)[number];

export const WORKLOADS_STATUS_FILTERS: readonly WorkloadsStatusFilter[] = [
  'ALL',
  'ACTIVE',
  ...JOB_STATUSES
];

/** The statuses a filter sends to the server (none: every status). */
export function filterStatuses(filter: WorkloadsStatusFilter): string[] {
  if (filter === 'ALL') {
    return [];
  }
  return filter === 'ACTIVE' ? [...ACTIVE_STATUSES] : [filter];
}

/** What the list shows. */
export type WorkloadsState = 'loading' | 'error' | 'empty' | 'jobs';

/** Fetches a page of job runs (injectable for tests). */
export type WorkloadsFetcher = (
  query: IWorkloadsQuery
) => Promise<IWorkloadsPage>;

export class WorkloadsModel extends PolledModel {
  constructor(options: WorkloadsModel.IOptions = {}) {
    super('jupyter-air:workloads');
    this._fetch = options.fetchWorkloads ?? fetchWorkloads;
    this._pageSize = options.pageSize ?? PAGE_SIZE;
  }

  get statusFilter(): WorkloadsStatusFilter {
    return this._status;
  }

  /** The experiment filter (its name), `null` for every experiment. */
  get experiment(): string | null {
    return this._experiment;
  }

  /** The index of the first job run of the page. */
  get offset(): number {
    return this._offset;
  }

  get pageSize(): number {
    return this._pageSize;
  }

  /** The query for the current filters and page. */
  get query(): IWorkloadsQuery {
    return {
      status: filterStatuses(this._status),
      experiment: this._experiment,
      limit: this._pageSize,
      offset: this._offset
    };
  }

  /** The last answer for the current query, `null` before it. */
  get page(): IWorkloadsPage | null {
    return this._page;
  }

  /** The job runs shown. */
  get jobs(): readonly IJob[] {
    const jobs = this._page?.workloads;
    return Array.isArray(jobs)
      ? jobs.filter(job => job && typeof job.id === 'string')
      : [];
  }

  /** How many job runs match the filters (over every page). */
  get total(): number {
    const total = this._page?.total;
    return typeof total === 'number' && Number.isFinite(total)
      ? total
      : this.jobs.length;
  }

  get hasPrevious(): boolean {
    return this._offset > 0;
  }

  get hasNext(): boolean {
    return this._offset + this._pageSize < this.total;
  }

  /** Experiment names seen in answers (and the one filtered on), for the filter's choices. */
  get experiments(): readonly string[] {
    const names = new Set(this._experiments);
    if (this._experiment) {
      names.add(this._experiment);
    }
    return Array.from(names).sort((a, b) => a.localeCompare(b));
  }

  /** Whether a job run shown may still change (polls faster). */
  get hasActive(): boolean {
    return this.jobs.some(job => isActiveStatus(job.status));
  }

  get state(): WorkloadsState {
    if (this._page === null) {
      return this._error !== null ? 'error' : 'loading';
    }
    return this.jobs.length === 0 ? 'empty' : 'jobs';
  }

  /** Milliseconds until the next poll while shown. */
  nextDelay(): number {
    return this.hasActive ? ACTIVE_POLL_MS : IDLE_POLL_MS;
  }

  setStatusFilter(filter: WorkloadsStatusFilter): void {
    if (!WORKLOADS_STATUS_FILTERS.includes(filter) || filter === this._status) {
      return;
    }
    this._status = filter;
    this._queryChanged(0);
  }

  setExperiment(name: string | null): void {
    const next = name || null;
    if (next === this._experiment) {
      return;
    }
    this._experiment = next;
    this._queryChanged(0);
  }

  nextPage(): void {
    if (this.hasNext) {
      this._queryChanged(this._offset + this._pageSize);
    }
  }

  previousPage(): void {
    if (this.hasPrevious) {
      this._queryChanged(Math.max(0, this._offset - this._pageSize));
    }
  }

  /** The filters or the page changed: forget the old rows, ask now if shown. */
  private _queryChanged(offset: number): void {
    this._offset = offset;
    this._page = null;
    this._error = null;
    this._changed.emit();
    this.refreshIfShown();
  }

  protected queryKey(): string {
    return JSON.stringify(this.query);
  }

  protected async poll(): Promise<void> {
    if (this.isDisposed) {
      return;
    }
    const query = this.query;
    const page = await this.answer(() => this._fetch(query));
    if (page === null) {
      return;
    }
    this._page = page;
    for (const job of this.jobs) {
      if (typeof job.experiment_name === 'string' && job.experiment_name) {
        this._experiments.add(job.experiment_name);
      }
    }
    // the last page emptied (job runs went away, a filter narrowed): back to the last one
    if (this.jobs.length === 0 && this._offset > 0 && this.total > 0) {
      const last =
        Math.floor((this.total - 1) / this._pageSize) * this._pageSize;
      if (last < this._offset) {
        this._queryChanged(last);
        return;
      }
    }
    this._changed.emit();
  }

  private readonly _fetch: WorkloadsFetcher;
  private readonly _pageSize: number;
  private _status: WorkloadsStatusFilter = 'ALL';
  private _experiment: string | null = null;
  private _offset = 0;
  private _page: IWorkloadsPage | null = null;
  private readonly _experiments = new Set<string>();
}

export namespace WorkloadsModel {
  export interface IOptions {
    /** Calls `air/api/workloads`; defaults to the real server. */
    fetchWorkloads?: WorkloadsFetcher;
    /** Job runs per page (default 50). */
    pageSize?: number;
  }
}
