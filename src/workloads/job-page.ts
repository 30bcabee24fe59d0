/**
 * A job run's page, shown in the Workloads panel in place of the list: status and reason, the
 * buttons Logs, Cancel (after a confirmation) and Open experiment, what it runs and when, each
 * attempt with its exit reason and its MLflow run and system-metrics links, and the YAML as it
 * was submitted. Plain DOM, text only (commands, names and YAML are user data).
 */
import { CommandIDs, ICommandRunner } from '../commands';
import { button, h, setAttr, setHidden, setText } from '../gpu/dom';
import { NONE } from '../mlflow/format';
import {
  attemptReason,
  attemptsText,
  commandText,
  computeText,
  elapsedMs,
  formatElapsed,
  formatTimeFull,
  jobName,
  jobStatusClass,
  jobStatusLabel,
  num
} from './format';
import { JobModel } from './job-model';
import { MlflowLink } from './links';
import { IAttempt, IJob, IJobNode, isActiveStatus } from './types';

/** Asks the user to confirm cancelling a job run. */
export type ConfirmCancel = (job: IJob) => Promise<boolean>;

/** How a node ended: `node 0: exit 0`, `node 1: SIGKILL`, `node 1: running`. */
function nodeText(node: IJobNode): string {
  const label = `node ${num(node.node) ?? '?'}`;
  if (node.signal !== null && node.signal !== undefined && node.signal !== '') {
    return `${label}: ${String(node.signal)}`;
  }
  const code = num(node.exit_code);
  return code !== null ? `${label}: exit ${code}` : `${label}: running`;
}

/** One attempt on the job page. */
class AttemptItem {
  constructor(commands: ICommandRunner, openLogs: (attempt: number) => void) {
    this.node = h('li', 'jp-air-wl-attempt');
    const line1 = h('div', 'jp-air-wl-attempt-line');
    this._title = h('span', 'jp-air-wl-attempt-title');
    this._status = h(
      'span',
      'jp-air-wl-attempt-status jp-air-badge jp-air-status-badge'
    );
    this._duration = h('span', 'jp-air-wl-attempt-duration');
    line1.append(this._title, this._status, this._duration);
    this._reason = h('div', 'jp-air-wl-attempt-reason');
    this._nodes = h('div', 'jp-air-wl-attempt-nodes');
    const links = h('div', 'jp-air-wl-attempt-links');
    this._run = new MlflowLink(
      commands,
      'jp-air-wl-attempt-run',
      'MLflow run',
      "This attempt's MLflow run"
    );
    this._metrics = new MlflowLink(
      commands,
      'jp-air-wl-attempt-metrics',
      'System metrics',
      'CPU, memory and GPU of this attempt in the MLflow UI'
    );
    this._logs = button(
      'jp-air-wl-link jp-air-wl-attempt-logs',
      'Logs',
      () => openLogs(this._attempt),
      "This attempt's logs"
    );
    links.append(this._run.node, this._metrics.node, this._logs);
    this.node.append(line1, this._reason, this._nodes, links);
  }

  readonly node: HTMLLIElement;

  update(attempt: IAttempt, now: number): void {
    this._attempt = num(attempt.attempt) ?? 0;
    this.node.dataset.attempt = String(this._attempt);
    this.node.dataset.status = String(attempt.status);
    setText(this._title, `Attempt ${this._attempt}`);
    setText(this._status, jobStatusLabel(attempt.status));
    const className = `jp-air-wl-attempt-status jp-air-badge jp-air-status-badge ${jobStatusClass(attempt.status)}`;
    if (this._status.className !== className) {
      this._status.className = className;
    }
    const ms = elapsedMs(attempt, now);
    setText(this._duration, ms === null ? '' : formatElapsed(attempt, now));
    setAttr(
      this._duration,
      'title',
      [
        attempt.started_at
          ? `Started ${formatTimeFull(attempt.started_at)}`
          : '',
        attempt.ended_at ? `Ended ${formatTimeFull(attempt.ended_at)}` : ''
      ]
        .filter(Boolean)
        .join('\n')
    );
    const reason = isActiveStatus(attempt.status) ? '' : attemptReason(attempt);
    setText(this._reason, reason);
    setHidden(this._reason, !reason);
    const nodes = Array.isArray(attempt.nodes) ? attempt.nodes : [];
    const nodesText = nodes.map(nodeText).join(' · ');
    setText(this._nodes, nodesText);
    setHidden(this._nodes, !nodesText);
    const links =
      attempt.links && typeof attempt.links === 'object' ? attempt.links : {};
    this._run.update(links.run);
    this._metrics.update(links.system_metrics);
  }

  private readonly _title: HTMLSpanElement;
  private readonly _status: HTMLSpanElement;
  private readonly _duration: HTMLSpanElement;
  private readonly _reason: HTMLDivElement;
  private readonly _nodes: HTMLDivElement;
  private readonly _run: MlflowLink;
  private readonly _metrics: MlflowLink;
  private readonly _logs: HTMLButtonElement;
  private _attempt = 0;
}

/** The job run's page. */
export class JobPage {
  constructor(options: JobPage.IOptions) {
    this._model = options.model;
    this._commands = options.commands;
    this._confirm = options.confirmCancel;
    this._now = options.now ?? (() => Date.now());
    this.node = h('div', 'jp-air-wl-page');

    const nav = h('div', 'jp-air-wl-page-nav');
    nav.append(
      button(
        'jp-air-wl-back jp-air-sidepanel-button',
        '‹ All workloads',
        () => options.onBack(),
        'Back to the list of job runs'
      ),
      button(
        'jp-air-wl-page-refresh jp-air-sidepanel-button',
        'Refresh',
        () => void this._model.refresh(),
        'Fetch this job run now'
      )
    );

    const header = h('div', 'jp-air-wl-page-header');
    this._name = h('h3', 'jp-air-wl-page-name');
    this._status = h(
      'span',
      'jp-air-wl-page-status jp-air-badge jp-air-status-badge'
    );
    this._duration = h('span', 'jp-air-wl-page-duration');
    header.append(this._name, this._status, this._duration);
    this._id = h('div', 'jp-air-wl-page-id');
    this._reason = h('div', 'jp-air-wl-page-reason');

    this._message = h('div', 'jp-air-wl-message jp-air-wl-page-message');
    this._message.setAttribute('role', 'status');

    const actions = h('div', 'jp-air-wl-actions');
    this._logsButton = button(
      'jp-air-wl-logs jp-air-sidepanel-button',
      'Logs',
      () => this._openLogs(null),
      "Read this job run's logs (node 0, latest attempt)"
    );
    this._cancelButton = button(
      'jp-air-wl-cancel jp-air-sidepanel-button',
      'Cancel',
      () => void this._cancel(),
      'Stop this job run (after a confirmation)'
    );
    this._experimentButton = button(
      'jp-air-wl-open-experiment jp-air-sidepanel-button',
      'Open experiment',
      () => this._openExperiment(),
      "Show this job run's experiment in the Experiment panel"
    );
    actions.append(
      this._logsButton,
      this._cancelButton,
      this._experimentButton
    );
    this._cancelError = h('div', 'jp-air-wl-error jp-air-wl-cancel-error');
    this._cancelError.setAttribute('role', 'alert');
    this._error = h('div', 'jp-air-wl-error');
    this._error.setAttribute('role', 'alert');

    this._facts = h('dl', 'jp-air-wl-facts');
    this._purged = h(
      'div',
      'jp-air-wl-purged',
      'Its logs were removed by the retention policy; its MLflow runs keep them as artifacts.'
    );

    this._attemptsTitle = h('h4', 'jp-air-wl-section', 'Attempts');
    this._attempts = h('ul', 'jp-air-wl-attempts');

    const yamlTitle = h('h4', 'jp-air-wl-section', 'Workload YAML');
    this._yaml = h('pre', 'jp-air-wl-yaml');
    this._noYaml = h('div', 'jp-air-wl-no-yaml');

    this._content = h('div', 'jp-air-wl-page-content');
    this._content.append(
      header,
      this._id,
      this._reason,
      actions,
      this._cancelError,
      this._error,
      this._purged,
      this._facts,
      this._attemptsTitle,
      this._attempts,
      yamlTitle,
      this._yaml,
      this._noYaml
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
    const model = this._model;
    const state = model.state;
    this.node.dataset.state = state;
    const job = model.job;
    const message =
      state === 'loading'
        ? 'Loading the job run…'
        : state === 'not-found'
          ? `No job run ${model.jobId}: ${model.error ?? 'not found'}`
          : state === 'error'
            ? `Cannot load job run ${model.jobId}: ${model.error}`
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
    setText(this._status, jobStatusLabel(job.status));
    const className = `jp-air-wl-page-status jp-air-badge jp-air-status-badge ${jobStatusClass(job.status)}`;
    if (this._status.className !== className) {
      this._status.className = className;
    }
    setText(this._id, `Job run ${job.id}`);
    const reason =
      job.cancel_requested && isActiveStatus(job.status)
        ? 'Cancelling…'
        : job.reason || '';
    setText(this._reason, reason);
    setHidden(this._reason, !reason);

    const cancelling =
      model.cancelling || (job.cancel_requested && !job.finished);
    setText(this._cancelButton, cancelling ? 'Cancelling…' : 'Cancel');
    this._cancelButton.disabled = !model.canCancel || cancelling;
    setAttr(
      this._cancelButton,
      'title',
      job.finished || !isActiveStatus(job.status)
        ? `This job run is over (${jobStatusLabel(job.status).toLowerCase()})`
        : 'Stop this job run (after a confirmation)'
    );
    this._experimentButton.disabled = !job.experiment_id;
    setText(
      this._cancelError,
      model.cancelError ? `Cannot cancel: ${model.cancelError}` : ''
    );
    setHidden(this._cancelError, !model.cancelError);
    const stale = model.error !== null ? `Cannot refresh: ${model.error}` : '';
    setText(this._error, stale);
    setHidden(this._error, !stale);
    setHidden(this._purged, !job.logs_purged);

    this._renderFacts(job, now);
    this._renderAttempts(job, now);

    const yaml = typeof job.spec_yaml === 'string' ? job.spec_yaml : '';
    setText(this._yaml, yaml);
    setHidden(this._yaml, !yaml);
    const noYaml = yaml
      ? ''
      : !job.spec_path && job.source === 'magic'
        ? `Submitted from a notebook cell (%%air_run); it runs: ${commandText(job.command)}`
        : 'No YAML was kept for this job run.';
    setText(this._noYaml, noYaml);
    setHidden(this._noYaml, !noYaml);
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
    setText(this._duration, ms === null ? '' : formatElapsed(job, now));
    const attempts = Array.isArray(job.attempts) ? job.attempts : [];
    attempts.forEach((attempt, i) => {
      if (isActiveStatus(attempt.status)) {
        this._attemptItems[i]?.update(attempt, now);
      }
    });
  }

  private _renderFacts(job: IJob, now: number): void {
    const facts: [string, string][] = [
      ['Experiment', job.experiment_name || NONE],
      ['Command', commandText(job.command) || NONE],
      ['Compute', computeText(job.compute)],
      [
        'Attempts',
        `${attemptsText(Array.isArray(job.attempts) ? job.attempts.length : 0)}` +
          (typeof job.max_retries === 'number'
            ? ` (retries: ${job.max_retries})`
            : '')
      ],
      [
        'Timeout',
        typeof job.timeout_minutes === 'number'
          ? `${job.timeout_minutes} min per attempt`
          : 'none'
      ],
      ['Working folder', job.working_dir || NONE],
      ['Submitted from', job.notebook || job.spec_path || job.source || NONE],
      ['User', job.user || NONE],
      ['Submitted', formatTimeFull(job.submitted_at) || NONE],
      ['Started', formatTimeFull(job.started_at) || NONE],
      ['Ended', formatTimeFull(job.ended_at) || NONE]
    ];
    const key = JSON.stringify(facts);
    if (key === this._factsKey) {
      return;
    }
    this._factsKey = key;
    this._facts.replaceChildren(
      ...facts.flatMap(([term, value]) => {
        const dd = h('dd', undefined, value);
        dd.title = value;
        return [h('dt', undefined, term), dd];
      })
    );
  }

  private _renderAttempts(job: IJob, now: number): void {
    const attempts = Array.isArray(job.attempts) ? job.attempts : [];
    while (this._attemptItems.length < attempts.length) {
      this._attemptItems.push(
        new AttemptItem(this._commands, attempt => this._openLogs(attempt))
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
      attempts.length ? `Attempts (${attempts.length})` : 'Attempts: none yet'
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
    this._commands
      .execute(id, args)
      .catch(reason => console.warn(`jupyter-air: ${id} failed`, reason));
  }

  private readonly _model: JobModel;
  private readonly _commands: ICommandRunner;
  private readonly _confirm: ConfirmCancel;
  private readonly _now: () => number;
  private readonly _name: HTMLHeadingElement;
  private readonly _status: HTMLSpanElement;
  private readonly _duration: HTMLSpanElement;
  private readonly _id: HTMLDivElement;
  private readonly _reason: HTMLDivElement;
  private readonly _message: HTMLDivElement;
  private readonly _content: HTMLDivElement;
  private readonly _logsButton: HTMLButtonElement;
  private readonly _cancelButton: HTMLButtonElement;
  private readonly _experimentButton: HTMLButtonElement;
  private readonly _cancelError: HTMLDivElement;
  private readonly _error: HTMLDivElement;
  private readonly _facts: HTMLDListElement;
  private readonly _purged: HTMLDivElement;
  private readonly _attemptsTitle: HTMLHeadingElement;
  private readonly _attempts: HTMLUListElement;
  private readonly _yaml: HTMLPreElement;
  private readonly _noYaml: HTMLDivElement;
  private readonly _attemptItems: AttemptItem[] = [];
  private _factsKey = '';
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
    now?: () => number;
  }
}
