/**
 * The Workloads panel's schedules (`air schedule`), without any DOM: polled while the list is
 * shown (every 30 s; the next firing moves on as slots pass), and paused or resumed on request
 * (the server's answer replaces the schedule at once).
 */
import { ISchedule, ISchedulesPage } from '../api/models';
import { describeError } from '../api';
import { PolledModel } from '../common/polled-model';
import { fetchSchedules, setSchedulePaused } from './api';

/** Poll cadence (ms). */
export const SCHEDULES_POLL_MS = 30000;

export class SchedulesModel extends PolledModel {
  constructor(options: SchedulesModel.IOptions = {}) {
    super('jupyter-air:schedules');
    this._fetch = options.fetchSchedules ?? fetchSchedules;
    this._setPaused = options.setPaused ?? setSchedulePaused;
  }

  /** The schedules, by name; empty before the first answer. */
  get schedules(): readonly ISchedule[] {
    const found = this._page?.schedules;
    return Array.isArray(found)
      ? found.filter(s => s && typeof s.id === 'string')
      : [];
  }

  /** Whether an answer came. */
  get loaded(): boolean {
    return this._page !== null;
  }

  /** The schedule being paused or resumed, `null` when none. */
  get busy(): string | null {
    return this._busy;
  }

  nextDelay(): number {
    return SCHEDULES_POLL_MS;
  }

  /** Pause or resume a schedule; its row shows the server's answer. */
  async setPaused(id: string, paused: boolean): Promise<void> {
    if (this._busy !== null) {
      return;
    }
    this._busy = id;
    this._changed.emit();
    try {
      const updated = await this._setPaused(id, paused);
      if (this._page && updated && typeof updated.id === 'string') {
        this._page = {
          schedules: this.schedules.map(s =>
            s.id === updated.id ? updated : s
          )
        };
      }
      this._error = null;
    } catch (error) {
      this._error = describeError(error);
    } finally {
      this._busy = null;
      if (!this.isDisposed) {
        this._changed.emit();
      }
    }
  }

  protected queryKey(): string {
    return 'schedules';
  }

  protected async poll(): Promise<void> {
    const page = await this.answer(() => this._fetch());
    if (page === null) {
      return;
    }
    this._page = page;
    this._changed.emit();
  }

  private readonly _fetch: () => Promise<ISchedulesPage>;
  private readonly _setPaused: (
    id: string,
    paused: boolean
  ) => Promise<ISchedule>;
  private _page: ISchedulesPage | null = null;
  private _busy: string | null = null;
}

export namespace SchedulesModel {
  export interface IOptions {
    /** Calls `air/api/schedules`; defaults to the real server. */
    fetchSchedules?: () => Promise<ISchedulesPage>;
    /** Calls `air/api/schedules/{id}/pause|resume`; defaults to the real server. */
    setPaused?: (id: string, paused: boolean) => Promise<ISchedule>;
  }
}
