/**
 * The "Experiments" side panel: the active notebook's MLflow experiment and its runs.
 *
 * The header names the experiment (and the notebook it belongs to); the controls (controls.ts)
 * let the user pick another experiment or filter runs by status; below, the runs as a tree
 * (run-list.ts), or a line that says why there are none (messages.ts: MLflow starting or
 * unreachable, no runs yet, no notebook). Clicking a run opens it in the MLflow tab. On a team
 * MLflow server (the user's own, with authentication), Share gives another user a permission on
 * the experiment (share.ts).
 *
 * The model (model.ts) polls while the panel is shown; this view only renders it, in place.
 * Plain DOM, text through `textContent` only (run and experiment names are user data).
 */
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';

import { CommandIDs, ICommandRunner, runCommand } from '../commands';
import {
  alertBox,
  button,
  h,
  setAttr,
  setHidden,
  setText
} from '../common/dom';
import { Poller } from '../common/poller';
import { ShownWidget } from '../common/shown-widget';
import { loadTranslation } from '../common/translation';
import { safeFragment, statusUiUrl } from '../mlflow/links';
import { describeError } from '../api';
import { IShareRequest, ISharedExperiment } from '../api/models';
import { ExperimentControls } from './controls';
import { stateMessage } from './messages';
import { ExperimentsModel } from './model';
import { RunList } from './run-list';
import { RunRow } from './run-row';
import { askShare, shareExperiment } from './share';

/** Milliseconds between updates of RUNNING durations. */
const CLOCK_MS = 1000;

/** The file name of a path. */
function baseName(path: string): string {
  const parts = path.split('/');
  return parts[parts.length - 1] || path;
}

/** The Experiment panel. */
export class ExperimentsPanel extends ShownWidget {
  constructor(options: ExperimentsPanel.IOptions) {
    super();
    this.addClass('jp-air-exp');
    this.addClass('jp-air-sidepanel');
    this._model = options.model;
    this._commands = options.commands;
    this._now = options.now ?? (() => Date.now());
    const trans = (this._trans = loadTranslation(options.translator));
    this.title.caption = trans.__('Experiments');

    // header: title, open in MLflow, refresh
    const header = h('div', 'jp-air-exp-header jp-air-sidepanel-header');
    this._openMlflow = button(
      'jp-air-exp-open-mlflow jp-air-sidepanel-button',
      trans.__('MLflow'),
      () => this._openExperiment(),
      trans.__('Open this experiment in the MLflow UI')
    );
    const refresh = button(
      'jp-air-exp-refresh jp-air-sidepanel-button',
      trans.__('Refresh'),
      () => {
        void this._model.refresh();
        void this._model.refreshExperiments();
      },
      trans.__('Fetch the runs now')
    );
    this._askShare = options.askShare ?? (name => askShare(trans, name));
    this._share = options.share ?? shareExperiment;
    this._shareButton = button(
      'jp-air-exp-share-button jp-air-sidepanel-button',
      trans.__('Share…'),
      () => void this._shareExperiment(),
      trans.__(
        'Give another user of this MLflow server access to this experiment'
      )
    );
    header.append(
      h(
        'h2',
        'jp-air-exp-title jp-air-sidepanel-title',
        trans.__('Experiments')
      ),
      this._openMlflow,
      this._shareButton,
      refresh
    );

    // which experiment
    const target = h('div', 'jp-air-exp-target');
    this._name = h('div', 'jp-air-exp-name');
    this._source = h('div', 'jp-air-exp-source');
    target.append(this._name, this._source);

    this._controls = new ExperimentControls(this._model, trans);
    this._message = h('div', 'jp-air-exp-message');
    this._message.setAttribute('role', 'status');
    this._error = alertBox('jp-air-exp-error');
    this._runs = new RunList(trans, {
      openRun: row => this._openRun(row),
      openWorkload: id => this._execute(CommandIDs.openWorkloads, { id })
    });
    this._truncated = h('div', 'jp-air-exp-truncated');
    this._shared = h('div', 'jp-air-exp-shared');
    this._shared.setAttribute('role', 'status');
    this._shared.hidden = true;
    this.node.append(
      header,
      target,
      this._shared,
      this._controls.node,
      this._message,
      this._error,
      this._runs.node,
      this._truncated
    );

    this._clock = new Poller({
      name: 'jupyter-air:experiments-clock',
      poll: () => this._runs.tick(this._now()),
      interval: CLOCK_MS
    });
    this._model.changed.connect(this.render, this);
    this.render();
  }

  /** The model behind the panel. */
  get model(): ExperimentsModel {
    return this._model;
  }

  /** The row of a run shown (for tests), `null` when not shown. */
  rowOf(runId: string): RunRow | null {
    return this._runs.rowOf(runId);
  }

  /** Update the panel from the model. */
  render(): void {
    if (this.isDisposed) {
      return;
    }
    const trans = this._trans;
    const model = this._model;
    const state = model.state;
    this.node.dataset.state = state;
    this._renderTarget();
    this._controls.render();

    // state line
    const message = stateMessage(trans, model);
    setText(this._message, message ?? '');
    setHidden(this._message, message === null);
    this._message.dataset.state = state;
    const staleError =
      model.error !== null && model.payload !== null
        ? trans.__('Cannot refresh: %1', model.error)
        : null;
    setText(this._error, staleError ?? '');
    setHidden(this._error, staleError === null);

    // runs
    const showRuns = state === 'runs';
    setHidden(this._runs.node, !showRuns);
    this._runs.render(
      showRuns ? model.tree : [],
      model.mlflow ? statusUiUrl(model.mlflow) : null,
      this._now(),
      model.highlightedRunId
    );
    const truncated = showRuns && model.payload?.truncated === true;
    setText(
      this._truncated,
      truncated ? trans.__('Showing the latest %1 runs', model.runs.length) : ''
    );
    setHidden(this._truncated, !truncated);

    if (showRuns && model.takeScrollRequest()) {
      const id = model.highlightedRunId;
      const row = id ? this._runs.rowOf(id) : null;
      row?.scrollIntoView();
    }
    this._updateClock();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._clock.dispose();
    this._model.changed.disconnect(this.render, this);
    this._model.stop();
    super.dispose();
  }

  protected onShown(): void {
    this._model.start();
    this._updateClock();
  }

  protected onHidden(): void {
    this._model.stop();
    this._clock.stop();
  }

  /** Which experiment, and where it comes from (the notebook, or a pick). */
  private _renderTarget(): void {
    const trans = this._trans;
    const model = this._model;
    const notebook = model.notebookPath;
    const picked = model.selectedExperimentId;
    setText(
      this._name,
      model.experimentName ??
        (picked !== null
          ? trans.__('Experiment %1', picked)
          : notebook
            ? '…'
            : trans.__('No experiment'))
    );
    setAttr(
      this._name,
      'title',
      model.experimentId ? trans.__('Experiment ID %1', model.experimentId) : ''
    );
    const source =
      picked !== null
        ? trans.__('Picked experiment')
        : notebook !== null
          ? trans.__('Notebook %1', baseName(notebook))
          : '';
    setText(this._source, source);
    setAttr(this._source, 'title', picked === null && notebook ? notebook : '');
    setHidden(this._source, !source);
    setHidden(this._openMlflow, !model.experimentId);
    if (this._sharedFor !== model.experimentId) {
      setHidden(this._shared, true); // what was said is of another experiment
    }
    // sharing needs MLflow's authentication: only the user's own server can have it
    setHidden(
      this._shareButton,
      !model.experimentId || model.mlflow?.mode !== 'external'
    );
  }

  /** Ask whom to share the shown experiment with, share it, and say what happened. */
  private async _shareExperiment(): Promise<void> {
    const trans = this._trans;
    const id = this._model.experimentId;
    if (!id) {
      return;
    }
    const name = this._model.experimentName ?? id;
    const request = await this._askShare(name);
    if (!request) {
      return;
    }
    let said: string;
    let failed = false;
    try {
      const shared = await this._share(id, request);
      said = shared.replaced
        ? trans.__(
            '%1 now has %2 on %3 (their earlier permission replaced).',
            shared.username,
            shared.permission,
            shared.experiment_name
          )
        : trans.__(
            'Shared %1 with %2 (%3).',
            shared.experiment_name,
            shared.username,
            shared.permission
          );
    } catch (error) {
      failed = true;
      said = trans.__('Cannot share %1: %2', name, describeError(error));
    }
    if (this.isDisposed) {
      return;
    }
    this._sharedFor = id;
    setText(this._shared, said);
    this._shared.setAttribute('role', failed ? 'alert' : 'status');
    this._shared.dataset.failed = String(failed);
    setHidden(this._shared, false);
  }

  private _openRun(row: RunRow): void {
    const run = row.run;
    if (!run) {
      return;
    }
    this._model.setHighlight(run.run_id);
    const path = safeFragment(run.links?.run);
    this._execute(CommandIDs.openMlflow, path ? { path } : {});
  }

  private _openExperiment(): void {
    const id = this._model.experimentId;
    if (!id) {
      return;
    }
    const fromRun = this._model.runs.find(run =>
      safeFragment(run.links?.experiment)
    );
    const path = fromRun
      ? safeFragment(fromRun.links.experiment)!
      : `#/experiments/${encodeURIComponent(id)}`;
    this._execute(CommandIDs.openMlflow, { path });
  }

  private _execute(id: string, args: { [key: string]: string }): void {
    runCommand(this._commands, id, args);
  }

  /** Tick RUNNING durations every second while shown. */
  private _updateClock(): void {
    if (
      this.isVisible &&
      this._model.hasRunning &&
      this._model.state === 'runs'
    ) {
      this._clock.start(CLOCK_MS);
    } else {
      this._clock.stop();
    }
  }

  private readonly _model: ExperimentsModel;
  private readonly _commands: ICommandRunner;
  private readonly _now: () => number;
  private readonly _trans: TranslationBundle;
  private readonly _openMlflow: HTMLButtonElement;
  private readonly _shareButton: HTMLButtonElement;
  private readonly _shared: HTMLDivElement;
  private _sharedFor: string | null = null;
  private readonly _askShare: (name: string) => Promise<IShareRequest | null>;
  private readonly _share: (
    id: string,
    request: IShareRequest
  ) => Promise<ISharedExperiment>;
  private readonly _name: HTMLDivElement;
  private readonly _source: HTMLDivElement;
  private readonly _controls: ExperimentControls;
  private readonly _message: HTMLDivElement;
  private readonly _error: HTMLDivElement;
  private readonly _runs: RunList;
  private readonly _truncated: HTMLDivElement;
  private readonly _clock: Poller;
}

export namespace ExperimentsPanel {
  export interface IOptions {
    /** The panel's state. */
    model: ExperimentsModel;
    /** Runs `jupyter-air:open-mlflow`. */
    commands: ICommandRunner;
    /** Milliseconds clock; defaults to `Date.now`. */
    now?: () => number;
    /** Translates the panel's strings (default: as written). */
    translator?: ITranslator | null;
    /** Asks whom to share an experiment with (default: JupyterLab's dialog). */
    askShare?: (experimentName: string) => Promise<IShareRequest | null>;
    /** Shares an experiment (default: `POST air/api/experiments/{id}/share`). */
    share?: (id: string, request: IShareRequest) => Promise<ISharedExperiment>;
  }
}
