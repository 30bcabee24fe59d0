/**
 * The "Workloads" side panel: the data folder's schedules (schedules-view.ts), then the user's
 * job runs, newest first, filtered by status and experiment, a page at a time (list-view.ts);
 * clicking one (or a schedule's run) shows its page (job-page.ts:
 * attempts, MLflow links, YAML, Logs, Cancel, Open experiment) in the panel, with a way back to
 * the list.
 *
 * The models (model.ts for the list, job-model.ts for a job run) poll while the panel is shown
 * (faster while something is active); this view only renders them, in place. Plain DOM, text
 * through `textContent` only.
 */
import { ITranslator } from '@jupyterlab/translation';

import { ICommandRunner } from '../commands';
import { button, h, setHidden } from '../common/dom';
import { Poller } from '../common/poller';
import { ShownWidget } from '../common/shown-widget';
import { loadTranslation } from '../common/translation';
import { confirmCancelDialog } from './confirm';
import { JobModel } from './job-model';
import { ConfirmCancel, JobPage } from './job-page';
import { JobRow } from './job-row';
import { JobList } from './list-view';
import { WorkloadsModel } from './model';
import { SchedulesModel } from './schedules-model';
import { ScheduleList } from './schedules-view';

/** Milliseconds between updates of active durations. */
const CLOCK_MS = 1000;

export class WorkloadsPanel extends ShownWidget {
  constructor(options: WorkloadsPanel.IOptions) {
    super();
    this.addClass('jp-air-wl');
    this.addClass('jp-air-sidepanel');
    this._model = options.model;
    this._jobModel = options.jobModel;
    this._now = options.now ?? (() => Date.now());
    const trans = loadTranslation(options.translator);
    this.title.caption = trans.__('Workloads');

    const header = h('div', 'jp-air-wl-header jp-air-sidepanel-header');
    // the list's Refresh (a job run's page has its own)
    this._refresh = button(
      'jp-air-wl-refresh jp-air-sidepanel-button',
      trans.__('Refresh'),
      () => {
        void this._model.refresh();
        void this._schedulesModel?.refresh();
      },
      trans.__('Fetch the job runs now')
    );
    header.append(
      h('h2', 'jp-air-wl-title jp-air-sidepanel-title', trans.__('Workloads')),
      this._refresh
    );
    this._list = new JobList(this._model, trans, id => this.openJob(id));
    this._schedulesModel = options.schedulesModel ?? null;
    this._schedules = this._schedulesModel
      ? new ScheduleList(this._schedulesModel, trans, id => this.openJob(id))
      : null;
    this._page = new JobPage({
      model: this._jobModel,
      commands: options.commands,
      confirmCancel:
        options.confirmCancel ?? (job => confirmCancelDialog(trans, job)),
      onBack: () => this.showList(),
      trans,
      now: this._now
    });
    this.node.append(header);
    if (this._schedules) {
      this.node.append(this._schedules.node);
    }
    this.node.append(this._list.node, this._page.node);

    this._clock = new Poller({
      name: 'jupyter-air:workloads-clock',
      poll: () => this._tick(),
      interval: CLOCK_MS
    });
    this._model.changed.connect(this._renderList, this);
    this._jobModel.changed.connect(this._renderPage, this);
    this._schedulesModel?.changed.connect(this._renderList, this);
    this._render();
  }

  /** The schedules' state, `null` when the panel shows none. */
  get schedulesModel(): SchedulesModel | null {
    return this._schedulesModel;
  }

  /** The row of a schedule shown (for tests), `null` when not shown. */
  scheduleRowOf(id: string): HTMLElement | null {
    return this._schedules?.rowOf(id) ?? null;
  }

  get model(): WorkloadsModel {
    return this._model;
  }

  get jobModel(): JobModel {
    return this._jobModel;
  }

  /** What the panel shows: the list or a job run's page. */
  get view(): 'list' | 'job' {
    return this._jobModel.jobId !== null ? 'job' : 'list';
  }

  /** The row of a job run shown (for tests), `null` when not shown. */
  rowOf(jobId: string): JobRow | null {
    return this._list.rowOf(jobId);
  }

  /** Show a job run's page. */
  openJob(id: string): void {
    this._model.stop();
    this._schedulesModel?.stop();
    this._jobModel.setJob(id);
    if (this.isVisible) {
      this._jobModel.start();
    }
    this._render();
  }

  /** Back to the list. */
  showList(): void {
    this._jobModel.stop();
    this._jobModel.setJob(null);
    if (this.isVisible) {
      this._model.start();
      this._schedulesModel?.start();
    }
    this._render();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._clock.dispose();
    this._model.changed.disconnect(this._renderList, this);
    this._jobModel.changed.disconnect(this._renderPage, this);
    this._schedulesModel?.changed.disconnect(this._renderList, this);
    this._schedulesModel?.stop();
    this._model.stop();
    this._jobModel.stop();
    super.dispose();
  }

  protected onShown(): void {
    if (this.view === 'job') {
      this._jobModel.start();
    } else {
      this._model.start();
      this._schedulesModel?.start();
    }
    this._updateClock();
  }

  protected onHidden(): void {
    this._model.stop();
    this._schedulesModel?.stop();
    this._jobModel.stop();
    this._clock.stop();
  }

  private _render(): void {
    this._renderList();
    this._renderPage();
  }

  private _renderList(): void {
    if (this.isDisposed) {
      return;
    }
    const showList = this.view === 'list';
    setHidden(this._list.node, !showList);
    setHidden(this._refresh, !showList);
    this.node.dataset.view = this.view;
    this._list.render(this._now());
    if (this._schedules) {
      this._schedules.render(this._now());
      if (!showList) {
        setHidden(this._schedules.node, true);
      }
    }
    this._updateClock();
  }

  private _renderPage(): void {
    if (this.isDisposed) {
      return;
    }
    const showPage = this.view === 'job';
    this.node.dataset.view = this.view;
    setHidden(this._page.node, !showPage);
    setHidden(this._list.node, showPage);
    if (this._schedules && showPage) {
      setHidden(this._schedules.node, true);
    }
    if (showPage) {
      this._page.render();
    }
    this._updateClock();
  }

  /** Tick durations every second while shown and something is active. */
  private _updateClock(): void {
    const live = this.view === 'job' ? this._page.isLive : this._list.isLive;
    if (this.isVisible && live) {
      this._clock.start(CLOCK_MS);
    } else {
      this._clock.stop();
    }
  }

  private _tick(): void {
    if (this.view === 'job') {
      this._page.tick();
    } else {
      this._list.tick(this._now());
    }
  }

  private readonly _model: WorkloadsModel;
  private readonly _jobModel: JobModel;
  private readonly _now: () => number;
  private readonly _refresh: HTMLButtonElement;
  private readonly _list: JobList;
  private readonly _schedulesModel: SchedulesModel | null;
  private readonly _schedules: ScheduleList | null;
  private readonly _page: JobPage;
  private readonly _clock: Poller;
}

export namespace WorkloadsPanel {
  export interface IOptions {
    /** The list's state. */
    model: WorkloadsModel;
    /** A job run's page state. */
    jobModel: JobModel;
    /** The schedules' state (the Schedules section); none: no such section. */
    schedulesModel?: SchedulesModel;
    /** Runs `jupyter-air:open-logs`, `open-mlflow`, `open-experiments`. */
    commands: ICommandRunner;
    /** Asks before cancelling; defaults to JupyterLab's dialog. */
    confirmCancel?: ConfirmCancel;
    /** Milliseconds clock; defaults to `Date.now`. */
    now?: () => number;
    /** Translates the panel's strings (default: as written). */
    translator?: ITranslator | null;
  }
}
