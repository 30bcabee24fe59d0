/**
 * The renderer of run displays (`application/vnd.jupyter-air.run+json`) in cell outputs: a run
 * card (run-card.ts) whose links open the MLflow tab and whose buttons open the Experiment panel
 * on the run (and, for an attempt of a workload, its job run in the Workloads panel and the
 * attempt's logs).
 *
 * Each link is a real `<a href>` (the UI URL + fragment) so middle-click and "open in new tab"
 * work; a plain click runs `jupyter-air:open-mlflow` instead, which shows it inside JupyterLab.
 * The kernel updates the display in place when the run's status changes: `renderModel` is called
 * again on the same widget and updates the card. While the card is on the page and says RUNNING,
 * its duration ticks every second and it asks the server now and then whether the run still runs:
 * a notebook saved while a run ran and reopened later, or a run ended by another process, shows
 * how the run really ended instead of a clock that never stops.
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { ITranslator } from '@jupyterlab/translation';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { CommandIDs, ICommandRunner, runCommand } from '../commands';
import { Poller } from '../common/poller';
import { loadTranslation } from '../common/translation';
import { fetchRunState } from './api';
import { safeFragment } from './links';
import { RunCard, RunLinkKind } from './run-card';
import { IRunDisplay, RUN_MIME_TYPE, asRunDisplay } from './types';

/** First check of a RUNNING card's run with the server (ms after it shows). */
export const RUN_CHECK_FIRST_MS = 2000;
/** Then every… (ms; the kernel updates live runs itself, this is for stale cards). */
export const RUN_CHECK_EVERY_MS = 20000;
/** Milliseconds between updates of a RUNNING run's duration. */
const CLOCK_MS = 1000;

/** A rendered run display. */
export class RunRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(options: RunRenderer.IOptions) {
    super();
    this.addClass('jp-air-run');
    this._commands = options.commands;
    this._mimeType = options.mimeType ?? RUN_MIME_TYPE;
    this._now = options.now ?? (() => Date.now());
    this._fetchRunState = options.fetchRunState ?? fetchRunState;
    this._card = new RunCard(loadTranslation(options.translator), {
      openLink: kind => this._openLink(kind),
      openPanel: () => this._openPanel(),
      openWorkload: () => this._openWorkload(),
      openLogs: () => this._openLogs()
    });
    this.node.append(this._card.header, this._card.meta, this._card.links);
    this._clock = new Poller({
      name: 'jupyter-air:run-clock',
      poll: () => this._renderDuration(),
      interval: CLOCK_MS
    });
    this._check = new Poller({
      name: 'jupyter-air:run-check',
      poll: () => this._checkRun(),
      interval: RUN_CHECK_EVERY_MS
    });
  }

  /** The run shown, `null` before the first `renderModel`. */
  get run(): IRunDisplay | null {
    return this._run;
  }

  /** Render (or re-render, on update_display) a run display. */
  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this._show(asRunDisplay(model.data[this._mimeType]));
    return Promise.resolve();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._clock.dispose();
    this._check.dispose();
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this._renderDuration();
    this._updatePolls();
  }

  protected onBeforeDetach(msg: Message): void {
    this._clock.stop();
    this._check.stop();
    super.onBeforeDetach(msg);
  }

  /** Show a run, and tick or check only while it shows RUNNING. */
  private _show(run: IRunDisplay): void {
    this._run = run;
    this.node.dataset.status = run.status;
    this.node.dataset.runId = run.run_id;
    this._card.render(run, this._now());
    this._updatePolls();
  }

  /** Tick while RUNNING and on the page; check with the server too unless it gave up. */
  private _updatePolls(): void {
    const run = this._run;
    const running =
      this.isAttached &&
      run !== null &&
      run.status === 'RUNNING' &&
      run.end_time === null;
    if (running && run.start_time !== null) {
      this._clock.start(CLOCK_MS);
    } else {
      this._clock.stop();
    }
    if (running && !!run.run_id && !this._checkGaveUp) {
      this._check.start(RUN_CHECK_FIRST_MS);
    } else {
      this._check.stop();
    }
  }

  private _renderDuration(): void {
    if (this._run) {
      this._card.renderDuration(this._run, this._now());
    }
  }

  /** Ask the server how the run shown is; a failure (MLflow starting) backs off. */
  private async _checkRun(): Promise<void> {
    const asked = this._run;
    if (!asked || this.isDisposed) {
      return;
    }
    const state = await this._fetchRunState(asked.run_id);
    if (state === null) {
      // not a run of this server's MLflow: nothing to compare with
      this._checkGaveUp = true;
      this._updatePolls();
    } else if (
      this._run === asked &&
      !this.isDisposed &&
      state.status !== 'RUNNING'
    ) {
      this._show({
        ...asked,
        status: String(state.status).toUpperCase(),
        end_time: state.end_time ?? this._now()
      });
    }
  }

  private _openLink(kind: RunLinkKind): void {
    const path = this._run ? safeFragment(this._run.links[kind]) : null;
    if (path !== null) {
      this._execute(CommandIDs.openMlflow, { path });
    }
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
    this._execute(CommandIDs.openExperiments, args);
  }

  private _openWorkload(): void {
    const id = this._run?.job_id;
    if (id) {
      this._execute(CommandIDs.openWorkloads, { id });
    }
  }

  private _openLogs(): void {
    const id = this._run?.job_id;
    if (id) {
      const attempt = this._run?.attempt;
      this._execute(CommandIDs.openLogs, attempt ? { id, attempt } : { id });
    }
  }

  private _execute(id: string, args: { [key: string]: string | number }): void {
    runCommand(this._commands, id, args);
  }

  private readonly _commands: ICommandRunner;
  private readonly _mimeType: string;
  private readonly _now: () => number;
  private readonly _fetchRunState: RunRenderer.FetchRunState;
  private readonly _card: RunCard;
  private readonly _clock: Poller;
  private readonly _check: Poller;
  private _run: IRunDisplay | null = null;
  private _checkGaveUp = false;
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
    /** Translates the card's strings (default: as written). */
    translator?: ITranslator | null;
  }

  /** A run's current status and end; `null` when the server does not know the run. */
  export type FetchRunState = (
    runId: string
  ) => Promise<{ status: string; end_time: number | null } | null>;
}

/** The rendermime factory of run displays (rank 10: before `text/html`). */
export function createRunRendererFactory(
  commands: ICommandRunner,
  translator?: ITranslator | null
): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [RUN_MIME_TYPE],
    defaultRank: 10,
    createRenderer: options =>
      new RunRenderer({
        commands,
        mimeType: options.mimeType,
        translator: translator ?? options.translator
      })
  };
}
