/**
 * The renderer of run displays (`application/vnd.jupyter-air.run+json`) in cell outputs.
 *
 * A compact card: run name, status badge with duration (ticking while RUNNING), experiment,
 * "nested in …" / "resumed" markers, and links to the run, its system metrics and the experiment
 * in the MLflow tab, plus a button that opens the Experiment panel on the run (and, for an attempt
 * of a workload, ones that open its job run in the Workloads panel and the attempt's logs).
 *
 * Each link is a real `<a href>` (the UI URL + fragment) so middle-click and "open in new tab"
 * work; a plain click runs `jupyter-air:open-mlflow` instead, which shows it inside JupyterLab.
 * The kernel updates the display in place when the run's status changes: `renderModel` is called
 * again on the same widget and updates the card. A card that says RUNNING also asks the server
 * now and then (while it is on the page) whether the run still runs: a notebook saved while a run
 * ran and reopened later, or a run ended by another process, shows how the run really ended
 * instead of a clock that never stops.
 *
 * Everything comes from kernel output (possibly an untrusted notebook): text goes through
 * `textContent`, hrefs only take http(s) URLs or paths and `#` fragments (see links.ts).
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { CommandIDs, ICommandRunner } from '../commands';
import { Ticker } from '../common/ticker';
import { ITimers, windowTimers } from '../common/timers';
import {
  button,
  h,
  isNewTabClick,
  newTabLink,
  setAttr,
  setHidden,
  setText
} from '../gpu/dom';
import {
  formatFullTime,
  formatRunDuration,
  runDurationMs,
  statusClass,
  statusLabel
} from './format';
import { fetchRunState } from './api';
import { safeFragment, safeUiUrl, uiLink } from './links';
import { IRunDisplay, RUN_MIME_TYPE, asRunDisplay } from './types';

/** First check of a RUNNING card's run with the server (ms after it shows). */
export const RUN_CHECK_FIRST_MS = 2000;
/** Then every… (ms; the kernel updates live runs itself, this is for stale cards). */
export const RUN_CHECK_EVERY_MS = 20000;

/** What a link of the card opens. */
type LinkKind = 'run' | 'system_metrics' | 'experiment';

/** A rendered run display. */
export class RunRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(options: RunRenderer.IOptions) {
    super();
    this.addClass('jp-air-run');
    this._commands = options.commands;
    this._mimeType = options.mimeType ?? RUN_MIME_TYPE;
    this._now = options.now ?? (() => Date.now());
    this._fetchRunState = options.fetchRunState ?? fetchRunState;
    this._timers = options.timers ?? windowTimers;

    const header = h('div', 'jp-air-run-header');
    this._name = h('span', 'jp-air-run-name');
    this._status = h(
      'span',
      'jp-air-run-status jp-air-badge jp-air-status-badge'
    );
    this._duration = h('span', 'jp-air-run-duration');
    header.append(this._name, this._status, this._duration);

    const meta = h('div', 'jp-air-run-meta');
    const experiment = h('span', 'jp-air-run-experiment');
    experiment.append(h('span', 'jp-air-run-label', 'Experiment '));
    this._experiment = h('span', 'jp-air-run-experiment-name');
    experiment.append(this._experiment);
    this._nested = h('span', 'jp-air-run-nested');
    this._resumed = h('span', 'jp-air-run-resumed', 'resumed');
    this._resumed.title = 'This run was resumed (MLFLOW_RUN_ID)';
    meta.append(experiment, this._nested, this._resumed);

    const links = h('div', 'jp-air-run-links');
    this._links = {
      run: this._makeLink(
        'run',
        'jp-air-run-link-run',
        'MLflow run',
        'This run in the MLflow UI'
      ),
      system_metrics: this._makeLink(
        'system_metrics',
        'jp-air-run-link-metrics',
        'System metrics',
        'CPU, memory and GPU of this run in the MLflow UI'
      ),
      experiment: this._makeLink(
        'experiment',
        'jp-air-run-link-experiment',
        'Experiment',
        'All runs of this experiment in the MLflow UI'
      )
    };
    this._panelButton = button(
      'jp-air-run-open-panel jp-air-run-button',
      'Experiment panel',
      () => this._openPanel(),
      'Show this run in the Experiment panel'
    );
    this._workloadButton = button(
      'jp-air-run-open-workload jp-air-run-button',
      'Workload',
      () => this._openWorkload(),
      'Show the job run of this attempt in the Workloads panel'
    );
    this._workloadButton.hidden = true;
    this._logsButton = button(
      'jp-air-run-open-logs jp-air-run-button',
      'Logs',
      () => this._openLogs(),
      "This attempt's logs"
    );
    this._logsButton.hidden = true;
    this._noUi = h('span', 'jp-air-run-no-ui');
    this._noUi.hidden = true;
    links.append(
      this._noUi,
      this._links.run,
      this._links.system_metrics,
      this._links.experiment,
      this._panelButton,
      this._workloadButton,
      this._logsButton
    );

    this.node.append(header, meta, links);
  }

  /** The run shown, `null` before the first `renderModel`. */
  get run(): IRunDisplay | null {
    return this._run;
  }

  /** Render (or re-render, on update_display) a run display. */
  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const run = asRunDisplay(model.data[this._mimeType]);
    this._run = run;
    this._render(run);
    this._updateTicker();
    this._updateCheck(RUN_CHECK_FIRST_MS);
    return Promise.resolve();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._ticker.stop();
    this._stopCheck();
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this._renderDuration();
    this._updateTicker();
    this._updateCheck(RUN_CHECK_FIRST_MS);
  }

  protected onBeforeDetach(msg: Message): void {
    this._ticker.stop();
    this._stopCheck();
    super.onBeforeDetach(msg);
  }

  /** Whether the card shows a run as RUNNING (and so should check it is). */
  private get _showsRunning(): boolean {
    const run = this._run;
    return (
      this.isAttached &&
      run !== null &&
      !!run.run_id &&
      run.status === 'RUNNING' &&
      run.end_time === null &&
      !this._checkGaveUp
    );
  }

  /** Check the run with the server in `delayMs` while the card shows it RUNNING. */
  private _updateCheck(delayMs: number): void {
    if (!this._showsRunning) {
      this._stopCheck();
      return;
    }
    if (this._checkTimer === null && !this._checking) {
      this._checkTimer = this._timers.setTimeout(() => {
        this._checkTimer = null;
        void this._check();
      }, delayMs);
    }
  }

  private _stopCheck(): void {
    if (this._checkTimer !== null) {
      this._timers.clearTimeout(this._checkTimer);
      this._checkTimer = null;
    }
  }

  private async _check(): Promise<void> {
    const asked = this._run;
    if (!asked || !this._showsRunning) {
      return;
    }
    this._checking = true;
    try {
      const state = await this._fetchRunState(asked.run_id);
      if (state === null) {
        // not a run of this server's MLflow: nothing to compare with
        this._checkGaveUp = true;
      } else if (
        this._run === asked &&
        !this.isDisposed &&
        state.status !== 'RUNNING'
      ) {
        this._run = {
          ...asked,
          status: String(state.status).toUpperCase(),
          end_time: state.end_time ?? this._now()
        };
        this._render(this._run);
        this._updateTicker();
      }
    } catch {
      // MLflow starting or unreachable: ask again later
    } finally {
      this._checking = false;
    }
    if (!this.isDisposed) {
      this._updateCheck(RUN_CHECK_EVERY_MS);
    }
  }

  private _makeLink(
    kind: LinkKind,
    className: string,
    label: string,
    title: string
  ): HTMLAnchorElement {
    const link = newTabLink(
      `jp-air-run-link jp-air-run-button ${className}`,
      label
    );
    link.title = title;
    link.addEventListener('click', event => {
      // new-tab clicks (modifier keys) keep the browser's behaviour
      if (isNewTabClick(event)) {
        return;
      }
      event.preventDefault();
      const path = this._run ? safeFragment(this._run.links[kind]) : null;
      if (path === null) {
        return;
      }
      this._commands
        .execute(CommandIDs.openMlflow, { path })
        .catch(reason =>
          console.warn('jupyter-air: cannot open the MLflow UI', reason)
        );
    });
    return link;
  }

  private _openPanel(): void {
    const run = this._run;
    if (!run) {
      return;
    }
    const args: { [key: string]: string } = {};
    if (run.experiment_id) {
      args.experiment_id = run.experiment_id;
    }
    if (run.run_id) {
      args.run_id = run.run_id;
    }
    this._commands
      .execute(CommandIDs.openExperiments, args)
      .catch(reason =>
        console.warn('jupyter-air: cannot open the Experiment panel', reason)
      );
  }

  private _openWorkload(): void {
    const id = this._run?.job_id;
    if (!id) {
      return;
    }
    this._commands
      .execute(CommandIDs.openWorkloads, { id })
      .catch(reason =>
        console.warn('jupyter-air: cannot open the Workloads panel', reason)
      );
  }

  private _openLogs(): void {
    const id = this._run?.job_id;
    if (!id) {
      return;
    }
    const attempt = this._run?.attempt;
    this._commands
      .execute(CommandIDs.openLogs, attempt ? { id, attempt } : { id })
      .catch(reason =>
        console.warn('jupyter-air: cannot open the logs', reason)
      );
  }

  private _render(run: IRunDisplay): void {
    this.node.dataset.status = run.status;
    this.node.dataset.runId = run.run_id;
    setText(this._name, run.run_name || run.run_id || 'MLflow run');
    setAttr(this._name, 'title', run.run_id ? `Run ID ${run.run_id}` : '');

    setText(this._status, statusLabel(run.status));
    this._status.className = `jp-air-run-status jp-air-badge jp-air-status-badge ${statusClass(run.status)}`;
    this._renderDuration();

    setText(this._experiment, run.experiment_name || run.experiment_id || '—');
    setAttr(
      this._experiment,
      'title',
      run.experiment_id ? `Experiment ID ${run.experiment_id}` : ''
    );

    const parent = run.parent_run_id;
    setHidden(this._nested, parent === null);
    setText(this._nested, parent ? `nested in ${shortId(parent)}` : '');
    setAttr(this._nested, 'title', parent ? `Child run of ${parent}` : '');
    setHidden(this._resumed, !run.resumed);

    // no UI (a tracking store without one, or an unusable URL): no links, and why
    const ui = safeUiUrl(run.ui);
    setHidden(this._noUi, ui !== null);
    setText(
      this._noUi,
      ui !== null
        ? ''
        : `No MLflow UI link: ${run.no_ui_reason || 'no MLflow UI is known for this run'}`
    );
    for (const kind of Object.keys(this._links) as LinkKind[]) {
      const link = this._links[kind];
      const fragment = safeFragment(run.links[kind]);
      const href =
        ui !== null && fragment !== null ? uiLink(ui, fragment) : null;
      setHidden(link, href === null);
      if (href !== null) {
        setAttr(link, 'href', href);
      } else {
        link.removeAttribute('href');
      }
    }
    setHidden(this._panelButton, !run.run_id && !run.experiment_id);
    const jobId = run.job_id ?? null;
    setHidden(this._workloadButton, !jobId);
    setHidden(this._logsButton, !jobId);
    setAttr(
      this._logsButton,
      'title',
      jobId
        ? `The logs of ${run.attempt ? `attempt ${run.attempt} of ` : ''}job run ${jobId}`
        : ''
    );
    setAttr(
      this._workloadButton,
      'title',
      jobId
        ? `Show job run ${jobId}${run.attempt ? ` (attempt ${run.attempt})` : ''} in the Workloads panel`
        : ''
    );
  }

  private _renderDuration(): void {
    const run = this._run;
    if (!run) {
      return;
    }
    const ms = runDurationMs(
      run.status,
      run.start_time,
      run.end_time,
      this._now()
    );
    setHidden(this._duration, ms === null);
    setText(this._duration, ms === null ? '' : formatRunDuration(ms));
    const started = formatFullTime(run.start_time);
    const ended = formatFullTime(run.end_time);
    setAttr(
      this._duration,
      'title',
      started ? `Started ${started}${ended ? `, ended ${ended}` : ''}` : ''
    );
  }

  /** Tick the duration every second while the run is RUNNING and the card is attached. */
  private _updateTicker(): void {
    this._ticker.setTicking(
      this.isAttached &&
        this._run !== null &&
        this._run.status === 'RUNNING' &&
        this._run.end_time === null &&
        this._run.start_time !== null
    );
  }

  private readonly _commands: ICommandRunner;
  private readonly _mimeType: string;
  private readonly _now: () => number;
  private readonly _name: HTMLSpanElement;
  private readonly _status: HTMLSpanElement;
  private readonly _duration: HTMLSpanElement;
  private readonly _experiment: HTMLSpanElement;
  private readonly _nested: HTMLSpanElement;
  private readonly _resumed: HTMLSpanElement;
  private readonly _links: Record<LinkKind, HTMLAnchorElement>;
  private readonly _panelButton: HTMLButtonElement;
  private readonly _workloadButton: HTMLButtonElement;
  private readonly _logsButton: HTMLButtonElement;
  private readonly _noUi: HTMLSpanElement;
  private _run: IRunDisplay | null = null;
  private readonly _ticker = new Ticker(() => this._renderDuration());
  private readonly _fetchRunState: RunRenderer.FetchRunState;
  private readonly _timers: ITimers;
  private _checkTimer: unknown = null;
  private _checking = false;
  private _checkGaveUp = false;
}

/** The first 8 characters of an MLflow id (32 hex digits): enough to tell runs apart. */
function shortId(id: string): string {
  return id.length > 12 ? id.slice(0, 8) : id;
}

export namespace RunRenderer {
  export interface IOptions {
    /** Runs `jupyter-air:open-mlflow` and `jupyter-air:open-experiments`. */
    commands: ICommandRunner;
    /** The MIME type rendered (default `application/vnd.jupyter-air.run+json`). */
    mimeType?: string;
    /** Milliseconds clock; defaults to `Date.now`. */
    now?: () => number;
    /** Asks the server for a run's status (default `GET air/api/runs/<id>`). */
    fetchRunState?: FetchRunState;
    /** Timers (injectable for tests). */
    timers?: ITimers;
  }

  /** A run's current status and end; `null` when the server does not know the run. */
  export type FetchRunState = (
    runId: string
  ) => Promise<{ status: string; end_time: number | null } | null>;
}

/** The rendermime factory of run displays (rank 10: before `text/html`). */
export function createRunRendererFactory(
  commands: ICommandRunner
): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [RUN_MIME_TYPE],
    defaultRank: 10,
    createRenderer: options =>
      new RunRenderer({ commands, mimeType: options.mimeType })
  };
}
