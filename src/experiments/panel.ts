/**
 * The "Experiments" side panel: the active notebook's MLflow experiment and its runs.
 *
 * The header names the experiment (and the notebook it belongs to) and lets the user pick another
 * experiment or filter runs by status; below, the runs as a tree (child runs under their parent),
 * or a line that says why there are none (MLflow starting or unreachable, no runs yet, no
 * notebook). Clicking a run opens it in the MLflow tab.
 *
 * The model (model.ts) polls while the panel is shown; this view only renders it, in place.
 * Plain DOM, text through `textContent` only (run and experiment names are user data).
 */
import { CommandIDs, ICommandRunner } from '../commands';
import { ShownWidget } from '../common/shown-widget';
import { Ticker } from '../common/ticker';
import {
  button,
  h,
  placeInOrder,
  setAttr,
  setHidden,
  setText
} from '../gpu/dom';
import { statusLabel } from '../mlflow/format';
import { safeFragment, statusUiUrl } from '../mlflow/links';
import {
  ExperimentsModel,
  IRunNode,
  STATUS_FILTERS,
  StatusFilter
} from './model';
import { RunRow } from './run-row';

/** The value of the picker's "this notebook's experiment" entry. */
const NOTEBOOK_OPTION = '';

/** Make `items` exactly the children of `parent`, in order (others removed). */
function setChildren(parent: HTMLElement, items: readonly HTMLElement[]): void {
  placeInOrder(parent, items);
  while (parent.childNodes.length > items.length) {
    parent.lastChild!.remove();
  }
}

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

    // header: title, open in MLflow, refresh
    const header = h('div', 'jp-air-exp-header jp-air-sidepanel-header');
    const title = h(
      'h2',
      'jp-air-exp-title jp-air-sidepanel-title',
      'Experiments'
    );
    this._openMlflow = button(
      'jp-air-exp-open-mlflow jp-air-sidepanel-button',
      'MLflow',
      () => this._openExperiment(),
      'Open this experiment in the MLflow UI'
    );
    const refresh = button(
      'jp-air-exp-refresh jp-air-sidepanel-button',
      'Refresh',
      () => {
        void this._model.refresh();
        void this._model.refreshExperiments();
      },
      'Fetch the runs now'
    );
    header.append(title, this._openMlflow, refresh);

    // which experiment
    const target = h('div', 'jp-air-exp-target');
    this._name = h('div', 'jp-air-exp-name');
    this._source = h('div', 'jp-air-exp-source');
    target.append(this._name, this._source);

    // controls: experiment picker, back, status filter
    const controls = h('div', 'jp-air-exp-controls');
    const pickLabel = h('label', 'jp-air-exp-control');
    pickLabel.append(h('span', 'jp-air-exp-control-label', 'Experiment'));
    this._picker = h('select', 'jp-air-exp-select');
    this._picker.title = 'Show the runs of another experiment';
    this._picker.addEventListener('focus', () => {
      void this._model.refreshExperiments();
    });
    this._picker.addEventListener('change', () => {
      const value = this._picker.value;
      this._model.selectExperiment(value === NOTEBOOK_OPTION ? null : value);
    });
    pickLabel.append(this._picker);

    const filterLabel = h('label', 'jp-air-exp-control');
    filterLabel.append(h('span', 'jp-air-exp-control-label', 'Status'));
    this._filter = h('select', 'jp-air-exp-filter');
    this._filter.title = 'Show only runs with this status';
    for (const filter of STATUS_FILTERS) {
      const option = h(
        'option',
        undefined,
        filter === 'ALL' ? 'All' : statusLabel(filter)
      );
      option.value = filter;
      this._filter.append(option);
    }
    this._filter.addEventListener('change', () => {
      this._model.setFilter(this._filter.value as StatusFilter);
    });
    filterLabel.append(this._filter);

    this._back = button(
      'jp-air-exp-back jp-air-sidepanel-button',
      "Back to this notebook's experiment",
      () => this._model.backToNotebook()
    );
    controls.append(pickLabel, filterLabel, this._back);

    this._message = h('div', 'jp-air-exp-message');
    this._message.setAttribute('role', 'status');
    this._error = h('div', 'jp-air-exp-error');
    this._error.setAttribute('role', 'alert');
    this._runs = h('ul', 'jp-air-exp-runs');
    this._truncated = h('div', 'jp-air-exp-truncated');

    this.node.append(
      header,
      target,
      controls,
      this._message,
      this._error,
      this._runs,
      this._truncated
    );

    this._model.changed.connect(this.render, this);
    this.render();
  }

  /** The model behind the panel. */
  get model(): ExperimentsModel {
    return this._model;
  }

  /** The row of a run shown (for tests), `null` when not shown. */
  rowOf(runId: string): RunRow | null {
    return this._rows.get(runId) ?? null;
  }

  /** Update the panel from the model. */
  render(): void {
    if (this.isDisposed) {
      return;
    }
    const model = this._model;
    const state = model.state;
    this.node.dataset.state = state;
    const notebook = model.notebookPath;
    const picked = model.selectedExperimentId;

    // which experiment
    const name = model.experimentName;
    setText(
      this._name,
      name ??
        (picked !== null
          ? `Experiment ${picked}`
          : notebook
            ? '…'
            : 'No experiment')
    );
    setAttr(
      this._name,
      'title',
      model.experimentId ? `Experiment ID ${model.experimentId}` : ''
    );
    const source =
      picked !== null
        ? 'Picked experiment'
        : notebook !== null
          ? `Notebook ${baseName(notebook)}`
          : '';
    setText(this._source, source);
    setAttr(this._source, 'title', picked === null && notebook ? notebook : '');
    setHidden(this._source, !source);
    setHidden(this._openMlflow, !model.experimentId);
    setHidden(this._back, picked === null || notebook === null);
    this._renderPicker();
    if (this._filter.value !== model.filter) {
      this._filter.value = model.filter;
    }

    // state line
    const message = this._messageText();
    setText(this._message, message ?? '');
    setHidden(this._message, message === null);
    this._message.dataset.state = state;
    const staleError =
      model.error !== null && model.payload !== null
        ? `Cannot refresh: ${model.error}`
        : null;
    setText(this._error, staleError ?? '');
    setHidden(this._error, staleError === null);

    // runs
    const showRuns = state === 'runs';
    setHidden(this._runs, !showRuns);
    this._renderRuns(showRuns ? model.tree : []);
    const truncated = showRuns && model.payload?.truncated === true;
    setText(
      this._truncated,
      truncated ? `Showing the latest ${model.runs.length} runs` : ''
    );
    setHidden(this._truncated, !truncated);

    if (showRuns && model.takeScrollRequest()) {
      const row = model.highlightedRunId
        ? this._rows.get(model.highlightedRunId)
        : null;
      row?.scrollIntoView();
    }
    this._updateTicker();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._ticker.stop();
    this._model.changed.disconnect(this.render, this);
    this._model.stop();
    super.dispose();
  }

  protected onShown(): void {
    this._model.start();
    this._updateTicker();
  }

  protected onHidden(): void {
    this._model.stop();
    this._ticker.stop();
  }

  /** The line that says what the panel shows instead of runs, `null` with runs. */
  private _messageText(): string | null {
    const model = this._model;
    const mlflow = model.mlflow;
    const name = model.experimentName ?? 'this experiment';
    switch (model.state) {
      case 'no-notebook':
        return 'Open a notebook to see its experiment';
      case 'loading':
        return 'Loading runs…';
      case 'starting': {
        const elapsed = mlflow?.elapsed_s;
        return typeof elapsed === 'number' && Number.isFinite(elapsed)
          ? `MLflow is starting (${Math.max(0, Math.round(elapsed))} s)…`
          : 'MLflow is starting…';
      }
      case 'unreachable': {
        const where = mlflow?.tracking_uri ? ` at ${mlflow.tracking_uri}` : '';
        const why = mlflow?.error
          ? `: ${mlflow.error}`
          : mlflow?.state === 'stopped'
            ? ': the tracking server is stopped'
            : '';
        return `MLflow unreachable${where}${why}`;
      }
      case 'disabled':
        return 'MLflow is disabled on this server';
      case 'error':
        return `Cannot load runs: ${model.error}`;
      case 'empty':
        return model.filter === 'ALL'
          ? `No runs yet in ${name}`
          : `No ${statusLabel(model.filter).toLowerCase()} runs in ${name}`;
      default:
        return null;
    }
  }

  /** The experiment picker: this notebook's experiment, then every experiment by name. */
  private _renderPicker(): void {
    const model = this._model;
    const picked = model.selectedExperimentId;
    const entries: [string, string][] = [];
    if (model.notebookPath !== null || picked === null) {
      entries.push([
        NOTEBOOK_OPTION,
        model.notebookPath !== null ? "This notebook's experiment" : '—'
      ]);
    }
    const experiments = model.experiments;
    if (picked !== null && !experiments.some(e => e.experiment_id === picked)) {
      entries.push([picked, model.experimentName ?? `Experiment ${picked}`]);
    }
    for (const e of experiments) {
      entries.push([e.experiment_id, e.name || e.experiment_id]);
    }
    const key = JSON.stringify(entries);
    if (key !== this._pickerKey) {
      this._pickerKey = key;
      this._picker.replaceChildren(
        ...entries.map(([value, label]) => {
          const option = h('option', undefined, label);
          option.value = value;
          return option;
        })
      );
    }
    const value = picked ?? NOTEBOOK_OPTION;
    if (this._picker.value !== value) {
      this._picker.value = value;
    }
    setAttr(
      this._picker,
      'title',
      model.experimentsError
        ? `Cannot list experiments: ${model.experimentsError}`
        : 'Show the runs of another experiment'
    );
  }

  /** Rows for the tree, reusing each run's row; rows of runs no longer shown are dropped. */
  private _renderRuns(tree: IRunNode[]): void {
    const ui = this._model.mlflow ? statusUiUrl(this._model.mlflow) : null;
    const now = this._now();
    const highlight = this._model.highlightedRunId;
    const seen = new Set<string>();
    const place = (nodes: IRunNode[], container: HTMLElement) => {
      const items: HTMLElement[] = [];
      for (const node of nodes) {
        const id = node.run.run_id;
        if (seen.has(id)) {
          continue;
        }
        seen.add(id);
        let row = this._rows.get(id);
        if (!row) {
          row = new RunRow(
            id,
            r => this._openRun(r),
            jobId => this._execute(CommandIDs.openWorkloads, { id: jobId })
          );
          this._rows.set(id, row);
        }
        row.update(node.run, ui, now);
        row.setHighlighted(id === highlight);
        place(node.children, row.children);
        setHidden(row.children, node.children.length === 0);
        items.push(row.node);
      }
      setChildren(container, items);
    };
    place(tree, this._runs);
    for (const id of Array.from(this._rows.keys())) {
      if (!seen.has(id)) {
        this._rows.delete(id);
      }
    }
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
    this._commands
      .execute(id, args)
      .catch(reason => console.warn(`jupyter-air: ${id} failed`, reason));
  }

  /** Tick RUNNING durations every second while shown. */
  private _updateTicker(): void {
    this._ticker.setTicking(
      this.isVisible && this._model.hasRunning && this._model.state === 'runs'
    );
  }

  /** One tick: the durations of the RUNNING runs shown. */
  private _tick(): void {
    const now = this._now();
    for (const row of this._rows.values()) {
      if (row.run?.status === 'RUNNING') {
        row.tick(now);
      }
    }
  }

  private readonly _model: ExperimentsModel;
  private readonly _commands: ICommandRunner;
  private readonly _now: () => number;
  private readonly _openMlflow: HTMLButtonElement;
  private readonly _name: HTMLDivElement;
  private readonly _source: HTMLDivElement;
  private readonly _picker: HTMLSelectElement;
  private readonly _filter: HTMLSelectElement;
  private readonly _back: HTMLButtonElement;
  private readonly _message: HTMLDivElement;
  private readonly _error: HTMLDivElement;
  private readonly _runs: HTMLUListElement;
  private readonly _truncated: HTMLDivElement;
  private readonly _rows = new Map<string, RunRow>();
  private _pickerKey = '';
  private readonly _ticker = new Ticker(() => this._tick());
}

export namespace ExperimentsPanel {
  export interface IOptions {
    /** The panel's state. */
    model: ExperimentsModel;
    /** Runs `jupyter-air:open-mlflow`. */
    commands: ICommandRunner;
    /** Milliseconds clock; defaults to `Date.now`. */
    now?: () => number;
  }
}
