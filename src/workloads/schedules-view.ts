/**
 * The "Schedules" section of the Workloads panel: each schedule with its cron expression and
 * timezone, next firing, paused state, last job runs (their statuses, each a link to its job
 * page) and a Pause / Resume button. Hidden while there is no schedule. Plain DOM, text through
 * `textContent` only; rebuilt from the model on each change (a few rows).
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { ISchedule } from '../api/models';
import {
  button,
  h,
  isNewTabClick,
  setAttr,
  setChildren,
  setHidden,
  setText
} from '../common/dom';
import { statusClass, statusLabel } from '../common/status';
import { formatTime, formatTimeFull } from './format';
import { SchedulesModel } from './schedules-model';

/** Last runs shown per schedule. */
export const RUNS_SHOWN = 5;

export class ScheduleList {
  constructor(
    model: SchedulesModel,
    trans: TranslationBundle,
    openJob: (id: string) => void
  ) {
    this._model = model;
    this._trans = trans;
    this._openJob = openJob;
    this.node = h('section', 'jp-air-wl-schedules');
    this.node.setAttribute('aria-label', trans.__('Schedules'));
    this._error = h('div', 'jp-air-wl-schedules-error');
    this._list = h('ul', 'jp-air-wl-schedule-list');
    this.node.append(
      h('h3', 'jp-air-wl-schedules-title', trans.__('Schedules')),
      this._error,
      this._list
    );
    setHidden(this.node, true);
  }

  readonly node: HTMLElement;

  /** The row of a schedule (for tests), `null` when not shown. */
  rowOf(id: string): HTMLElement | null {
    return (
      Array.from(
        this._list.querySelectorAll<HTMLElement>('.jp-air-wl-schedule')
      ).find(row => row.dataset.scheduleId === id) ?? null
    );
  }

  render(now: number): void {
    const schedules = this._model.schedules;
    const error = this._model.error;
    setHidden(this.node, schedules.length === 0 && error === null);
    setText(this._error, error ?? '');
    setHidden(this._error, error === null);
    setChildren(
      this._list,
      schedules.map(s => this._row(s, now))
    );
  }

  private _row(schedule: ISchedule, now: number): HTMLElement {
    const trans = this._trans;
    const paused = schedule.paused === true;
    const row = h('li', 'jp-air-wl-schedule');
    row.dataset.scheduleId = String(schedule.id);
    row.dataset.paused = String(paused);

    const head = h('div', 'jp-air-wl-schedule-head');
    const state = h(
      'span',
      `jp-air-wl-schedule-state ${paused ? 'jp-air-wl-schedule-paused' : 'jp-air-wl-schedule-active'}`,
      paused ? trans.__('Paused') : trans.__('Active')
    );
    const toggle = button(
      'jp-air-wl-schedule-toggle jp-air-sidepanel-button',
      paused ? trans.__('Resume') : trans.__('Pause'),
      () => void this._model.setPaused(String(schedule.id), !paused),
      paused
        ? trans.__('Fire again from the next slot')
        : trans.__('Fire no more until resumed')
    );
    toggle.disabled = this._model.busy !== null;
    head.append(
      h('span', 'jp-air-wl-schedule-name', String(schedule.name ?? '')),
      state,
      toggle
    );

    const when = h(
      'div',
      'jp-air-wl-schedule-when',
      `${String(schedule.cron ?? '')} (${String(schedule.timezone ?? '')})`
    );
    const next = h('div', 'jp-air-wl-schedule-next');
    const nextTime = h(
      'time',
      'jp-air-wl-schedule-next-time',
      paused ? '—' : formatTime(schedule.next_firing_at, now)
    );
    if (!paused && typeof schedule.next_firing_at === 'number') {
      setAttr(nextTime, 'title', formatTimeFull(schedule.next_firing_at));
      setAttr(
        nextTime,
        'datetime',
        new Date(schedule.next_firing_at * 1000).toISOString()
      );
    }
    next.append(trans.__('Next firing: '), nextTime);

    const runs = h('div', 'jp-air-wl-schedule-runs');
    const lastRuns = Array.isArray(schedule.last_runs)
      ? schedule.last_runs.slice(0, RUNS_SHOWN)
      : [];
    if (lastRuns.length === 0) {
      runs.append(trans.__('No runs yet'));
    } else {
      runs.append(trans.__('Last runs: '));
      for (const run of lastRuns) {
        const link = h(
          'a',
          `jp-air-wl-schedule-run jp-air-status ${statusClass(run.status)}`,
          statusLabel(trans, run.status)
        );
        link.dataset.jobId = String(run.id);
        link.title = trans.__('Job run %1', String(run.id));
        if (typeof run.link === 'string' && run.link.startsWith('/')) {
          setAttr(link, 'href', run.link);
        }
        link.addEventListener('click', event => {
          if (isNewTabClick(event)) {
            return;
          }
          event.preventDefault();
          this._openJob(String(run.id));
        });
        runs.append(link);
      }
    }
    row.append(head, when, next, runs);
    return row;
  }

  private readonly _model: SchedulesModel;
  private readonly _trans: TranslationBundle;
  private readonly _openJob: (id: string) => void;
  private readonly _error: HTMLElement;
  private readonly _list: HTMLUListElement;
}
