/**
 * A job run's page, shown in the Workloads panel in place of the list: status and reason, the
 * buttons Logs, Cancel (after a confirmation) and Open experiment, what it runs and when and the
 * YAML as it was submitted (job-facts.ts), each attempt (attempt-item.ts) with its exit reason
 * and its MLflow run and system-metrics links. Plain DOM, text only (commands, names and YAML are user data).
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { CommandIDs, ICommandRunner, runCommand } from '../commands';
import {
  alertBox,
  button,
  h,
  setAttr,
  setHidden,
  setText
} from '../common/dom';
import { StatusBadge, statusLabel } from '../common/status';
import { AttemptItem } from './attempt-item';
import { elapsedMs, formatElapsed, jobName } from './format';
import { JobFacts } from './job-facts';
import { JobModel } from './job-model';
import { IJob, isActiveStatus } from './types';

/** Asks the user to confirm cancelling a job run. */
export type ConfirmCancel = (job: IJob) => Promise<boolean>;

/** The job run's page. */
export class JobPage {
  constructor(options: JobPage.IOptions) {
    this._model = options.model;
    this._commands = options.commands;
    this._confirm = options.confirmCancel;
    this._now = options.now ?? (() => Date.now());
    const trans = (this._trans = options.trans);
    this.node = h('div', 'jp-air-wl-page');

    const nav = h('div', 'jp-air-wl-page-nav');
    nav.append(
      button(
        'jp-air-wl-back jp-air-sidepanel-button',
        trans.__('‹ All workloads'),
        () => options.onBack(),
        trans.__('Back to the list of job runs')
      ),
      button(
        'jp-air-wl-page-refresh jp-air-sidepanel-button',
        trans.__('Refresh'),
        () => void this._model.refresh(),
        trans.__('Fetch this job run now')
      )
    );

    const header = h('div', 'jp-air-wl-page-header');
    this._name = h('h3', 'jp-air-wl-page-name');
    this._status = new StatusBadge('jp-air-wl-page-status');
    this._duration = h('span', 'jp-air-wl-page-duration');
    header.append(this._name, this._status.node, this._duration);
    this._id = h('div', 'jp-air-wl-page-id');
    this._reason = h('div', 'jp-air-wl-page-reason');

    this._message = h('div', 'jp-air-wl-message jp-air-wl-page-message');
    this._message.setAttribute('role', 'status');
    this._cancelButton = button(
      'jp-air-wl-cancel jp-air-sidepanel-button',
      trans.__('Cancel'),
      () => void this._cancel()
    );
    this._experimentButton = button(
      'jp-air-wl-open-experiment jp-air-sidepanel-button',
      trans.__('Open experiment'),
      () => this._openExperiment(),
      trans.__("Show this job run's experiment in the Experiment panel")
    );
    this._cancelError = alertBox('jp-air-wl-error jp-air-wl-cancel-error');
    this._error = alertBox('jp-air-wl-error');
    this._purged = h(
      'div',
      'jp-air-wl-purged',
      trans.__(
        'Its logs were removed by the retention policy; its MLflow runs keep them as artifacts.'
      )
    );

    this._facts = new JobFacts(trans);
    this._content = h('div', 'jp-air-wl-page-content');
    this._content.append(
      header,
      this._id,
      this._reason,
      this._actions(),
      this._cancelError,
      this._error,
      this._purged,
      this._facts.facts,
      this._attemptsTitle,
      this._attempts,
      ...this._facts.yaml
    );
    this.node.append(nav, this._message, this._content);
  }

  /** The page's root element. */
  readonly node: HTMLDivElement;

  /** Whether some part ticks (an active job run). */
  get isLive(): boolean {
    const job = this._model.job;
    return job !== null && isActiveStatus(job.status);
  }

  render(): void {
    const trans = this._trans;
    const model = this._model;
    const state = model.state;
    this.node.dataset.state = state;
    const job = model.job;
    const message =
      state === 'loading'
        ? trans.__('Loading the job run…')
        : state === 'not-found'
          ? trans.__(
              'No job run %1: %2',
              model.jobId,
              model.error ?? trans.__('not found')
            )
          : state === 'error'
            ? trans.__('Cannot load job run %1: %2', model.jobId, model.error)
            : '';
    setText(this._message, message);
    setHidden(this._message, !message);
    setHidden(this._content, job === null);
    if (job === null) {
      return;
    }
    this.node.dataset.jobId = job.id;
    this.node.dataset.status = String(job.status);
    const now = this._now();
    setText(this._name, jobName(job));
    this._status.show(trans, job.status);
    setText(this._id, trans.__('Job run %1', job.id));
    const reason =
      job.cancel_requested && isActiveStatus(job.status)
        ? trans.__('Cancelling…')
        : job.reason || '';
    setText(this._reason, reason);
    setHidden(this._reason, !reason);
    this._renderActions(job);
    setHidden(this._purged, !job.logs_purged);
    this._facts.render(job);
    this._renderAttempts(job, now);
    this.tick();
  }

  /** Update the durations of an active job run. */
  tick(): void {
    const job = this._model.job;
    if (job === null) {
      return;
    }
    const now = this._now();
    const ms = elapsedMs(job, now);
    setText(
      this._duration,
      ms === null ? '' : formatElapsed(this._trans, job, now)
    );
    const attempts = Array.isArray(job.attempts) ? job.attempts : [];
    attempts.forEach((attempt, i) => {
      if (isActiveStatus(attempt.status)) {
        this._attemptItems[i]?.update(attempt, now);
      }
    });
  }

  /** Logs, Cancel and Open experiment. */
  private _actions(): HTMLDivElement {
    const actions = h('div', 'jp-air-wl-actions');
    actions.append(
      button(
        'jp-air-wl-logs jp-air-sidepanel-button',
        this._trans.__('Logs'),
        () => this._openLogs(null),
        this._trans.__("Read this job run's logs (node 0, latest attempt)")
      ),
      this._cancelButton,
      this._experimentButton
    );
    return actions;
  }

  /** What can be done now, and why a cancellation or a refresh failed. */
  private _renderActions(job: IJob): void {
    const trans = this._trans;
    const model = this._model;
    const cancelling =
      model.cancelling || (job.cancel_requested && !job.finished);
    setText(
      this._cancelButton,
      cancelling ? trans.__('Cancelling…') : trans.__('Cancel')
    );
    this._cancelButton.disabled = !model.canCancel || cancelling;
    setAttr(
      this._cancelButton,
      'title',
      job.finished || !isActiveStatus(job.status)
        ? trans.__(
            'This job run is over (%1)',
            statusLabel(trans, job.status).toLowerCase()
          )
        : job.status === 'QUEUED'
          ? trans.__(
              'Take this job run out of its queue (after a confirmation)'
            )
          : trans.__('Stop this job run (after a confirmation)')
    );
    this._experimentButton.disabled = !job.experiment_id;
    setText(
      this._cancelError,
      model.cancelError ? trans.__('Cannot cancel: %1', model.cancelError) : ''
    );
    setHidden(this._cancelError, !model.cancelError);
    const stale =
      model.error !== null ? trans.__('Cannot refresh: %1', model.error) : '';
    setText(this._error, stale);
    setHidden(this._error, !stale);
  }

  private _renderAttempts(job: IJob, now: number): void {
    const trans = this._trans;
    const attempts = Array.isArray(job.attempts) ? job.attempts : [];
    while (this._attemptItems.length < attempts.length) {
      this._attemptItems.push(
        new AttemptItem(trans, this._commands, attempt =>
          this._openLogs(attempt)
        )
      );
    }
    this._attemptItems.length = attempts.length;
    attempts.forEach((attempt, i) =>
      this._attemptItems[i].update(attempt, now)
    );
    // latest first
    const nodes = this._attemptItems.map(item => item.node).reverse();
    if (
      nodes.length !== this._attempts.children.length ||
      nodes.some((node, i) => this._attempts.children[i] !== node)
    ) {
      this._attempts.replaceChildren(...nodes);
    }
    setText(
      this._attemptsTitle,
      attempts.length
        ? trans.__('Attempts (%1)', attempts.length)
        : trans.__('Attempts: none yet')
    );
    setHidden(this._attempts, attempts.length === 0);
  }

  private _openLogs(attempt: number | null): void {
    const job = this._model.job;
    if (!job) {
      return;
    }
    const args: { [key: string]: string | number } = { id: job.id };
    if (attempt !== null && attempt > 0) {
      args.attempt = attempt;
    }
    this._execute(CommandIDs.openLogs, args);
  }

  private _openExperiment(): void {
    const job = this._model.job;
    if (job?.experiment_id) {
      this._execute(CommandIDs.openExperiments, {
        experiment_id: job.experiment_id
      });
    }
  }

  private async _cancel(): Promise<void> {
    const job = this._model.job;
    if (!job || !this._model.canCancel) {
      return;
    }
    let confirmed = false;
    try {
      confirmed = await this._confirm(job);
    } catch (reason) {
      console.warn('jupyter-air: cancel confirmation failed', reason);
    }
    if (confirmed && this._model.job?.id === job.id) {
      await this._model.cancel();
    }
  }

  private _execute(id: string, args: { [key: string]: string | number }): void {
    runCommand(this._commands, id, args);
  }

  private readonly _model: JobModel;
  private readonly _commands: ICommandRunner;
  private readonly _confirm: ConfirmCancel;
  private readonly _now: () => number;
  private readonly _trans: TranslationBundle;
  private readonly _name: HTMLHeadingElement;
  private readonly _status: StatusBadge;
  private readonly _duration: HTMLSpanElement;
  private readonly _id: HTMLDivElement;
  private readonly _reason: HTMLDivElement;
  private readonly _message: HTMLDivElement;
  private readonly _content: HTMLDivElement;
  private readonly _cancelButton: HTMLButtonElement;
  private readonly _experimentButton: HTMLButtonElement;
  private readonly _cancelError: HTMLDivElement;
  private readonly _error: HTMLDivElement;
  private readonly _purged: HTMLDivElement;
  private readonly _facts: JobFacts;
  private readonly _attemptsTitle = h('h4', 'jp-air-wl-section');
  private readonly _attempts = h('ul', 'jp-air-wl-attempts');
  private readonly _attemptItems: AttemptItem[] = [];
}

export namespace JobPage {
  export interface IOptions {
    model: JobModel;
    /** Runs `jupyter-air:open-logs`, `open-mlflow`, `open-experiments`. */
    commands: ICommandRunner;
    /** Asks before cancelling. */
    confirmCancel: ConfirmCancel;
    /** Back to the list. */
    onBack: () => void;
    /** The panel's strings. */
    trans: TranslationBundle;
    now?: () => number;
  }
}
