/**
 * The DOM of a run display in a cell output: run name, status badge with duration, experiment,
 * "nested in …" / "resumed" markers, links to the run, its system metrics and the experiment in
 * the MLflow UI, and buttons for the Experiment panel, the workload and its logs. Built once,
 * updated in place (`render`) when the kernel updates the display or the server says the run
 * ended; what a click does is the renderer's (run-renderer.ts).
 *
 * Everything comes from kernel output (possibly an untrusted notebook): text goes through
 * `textContent`, hrefs only take http(s) URLs or paths and `#` fragments (see links.ts).
 */
import { TranslationBundle } from '@jupyterlab/translation';

import {
  button,
  h,
  isNewTabClick,
  newTabLink,
  setAttr,
  setHidden,
  setText
} from '../common/dom';
import { StatusBadge } from '../common/status';
import { NONE } from '../common/text';
import { formatFullTime, formatRunDuration, runDurationMs } from './format';
import { safeFragment, safeUiUrl, uiLink } from './links';
import { IRunDisplay } from './types';

/** What a link of the card opens. */
export type RunLinkKind = 'run' | 'system_metrics' | 'experiment';

/** What the card's links and buttons do. */
export interface IRunCardActions {
  /** A plain click on a link (new-tab clicks keep the browser's behaviour). */
  openLink(kind: RunLinkKind): void;
  openPanel(): void;
  openWorkload(): void;
  openLogs(): void;
}

/** The first 8 characters of an MLflow id (32 hex digits): enough to tell runs apart. */
function shortId(id: string): string {
  return id.length > 12 ? id.slice(0, 8) : id;
}

export class RunCard {
  constructor(trans: TranslationBundle, actions: IRunCardActions) {
    this._trans = trans;
    this._actions = actions;
    this.header = h('div', 'jp-air-run-header');
    this._name = h('span', 'jp-air-run-name');
    this._status = new StatusBadge('jp-air-run-status');
    this._duration = h('span', 'jp-air-run-duration');
    this.header.append(this._name, this._status.node, this._duration);

    this.meta = h('div', 'jp-air-run-meta');
    const experiment = h('span', 'jp-air-run-experiment');
    this._experiment = h('span', 'jp-air-run-experiment-name');
    experiment.append(
      h('span', 'jp-air-run-label', trans.__('Experiment')),
      ' ',
      this._experiment
    );
    this._nested = h('span', 'jp-air-run-nested');
    this._resumed = h('span', 'jp-air-run-resumed', trans.__('resumed'));
    this._resumed.title = trans.__('This run was resumed (MLFLOW_RUN_ID)');
    this.meta.append(experiment, this._nested, this._resumed);

    this._links = this._makeLinks();
    this._panelButton = button(
      'jp-air-run-open-panel jp-air-run-button',
      trans.__('Experiment panel'),
      () => actions.openPanel(),
      trans.__('Show this run in the Experiment panel')
    );
    this._workloadButton = button(
      'jp-air-run-open-workload jp-air-run-button',
      trans.__('Workload'),
      () => actions.openWorkload()
    );
    this._logsButton = button(
      'jp-air-run-open-logs jp-air-run-button',
      trans.__('Logs'),
      () => actions.openLogs()
    );
    this._noUi = h('span', 'jp-air-run-no-ui');
    for (const hidden of [this._workloadButton, this._logsButton, this._noUi]) {
      hidden.hidden = true;
    }
    this.links = h('div', 'jp-air-run-links');
    this.links.append(
      this._noUi,
      this._links.run,
      this._links.system_metrics,
      this._links.experiment,
      this._panelButton,
      this._workloadButton,
      this._logsButton
    );
  }

  /** The name, status and duration. */
  readonly header: HTMLDivElement;
  /** The experiment and the markers. */
  readonly meta: HTMLDivElement;
  /** The links and buttons. */
  readonly links: HTMLDivElement;

  /** Show a run (everything but the duration's clock, see `renderDuration`). */
  render(run: IRunDisplay, now: number): void {
    const trans = this._trans;
    setText(this._name, run.run_name || run.run_id || trans.__('MLflow run'));
    setAttr(
      this._name,
      'title',
      run.run_id ? trans.__('Run ID %1', run.run_id) : ''
    );
    this._status.show(trans, run.status);
    this.renderDuration(run, now);

    setText(this._experiment, run.experiment_name || run.experiment_id || NONE);
    setAttr(
      this._experiment,
      'title',
      run.experiment_id ? trans.__('Experiment ID %1', run.experiment_id) : ''
    );

    const parent = run.parent_run_id;
    setHidden(this._nested, parent === null);
    setText(
      this._nested,
      parent ? trans.__('nested in %1', shortId(parent)) : ''
    );
    setAttr(
      this._nested,
      'title',
      parent ? trans.__('Child run of %1', parent) : ''
    );
    setHidden(this._resumed, !run.resumed);
    this._renderLinks(run);
  }

  /** The duration (ticks every second while the run is RUNNING) and its tooltip. */
  renderDuration(run: IRunDisplay, now: number): void {
    const trans = this._trans;
    const ms = runDurationMs(run.status, run.start_time, run.end_time, now);
    setHidden(this._duration, ms === null);
    setText(this._duration, ms === null ? '' : formatRunDuration(trans, ms));
    const started = formatFullTime(run.start_time);
    const ended = formatFullTime(run.end_time);
    setAttr(
      this._duration,
      'title',
      !started
        ? ''
        : ended
          ? trans.__('Started %1, ended %2', started, ended)
          : trans.__('Started %1', started)
    );
  }

  /** The links (or why there are none) and the buttons a run has. */
  private _renderLinks(run: IRunDisplay): void {
    const trans = this._trans;
    // no UI (a tracking store without one, or an unusable URL): no links, and why
    const ui = safeUiUrl(run.ui);
    setHidden(this._noUi, ui !== null);
    setText(
      this._noUi,
      ui !== null
        ? ''
        : trans.__(
            'No MLflow UI link: %1',
            run.no_ui_reason || trans.__('no MLflow UI is known for this run')
          )
    );
    for (const kind of Object.keys(this._links) as RunLinkKind[]) {
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
    const attempt = run.attempt;
    setAttr(
      this._logsButton,
      'title',
      !jobId
        ? ''
        : attempt
          ? trans.__('The logs of attempt %1 of job run %2', attempt, jobId)
          : trans.__('The logs of job run %1', jobId)
    );
    setAttr(
      this._workloadButton,
      'title',
      !jobId
        ? ''
        : attempt
          ? trans.__(
              'Show job run %1 (attempt %2) in the Workloads panel',
              jobId,
              attempt
            )
          : trans.__('Show job run %1 in the Workloads panel', jobId)
    );
  }

  private _makeLinks(): Record<RunLinkKind, HTMLAnchorElement> {
    const trans = this._trans;
    return {
      run: this._makeLink(
        'run',
        'jp-air-run-link-run',
        trans.__('MLflow run'),
        trans.__('This run in the MLflow UI')
      ),
      system_metrics: this._makeLink(
        'system_metrics',
        'jp-air-run-link-metrics',
        trans.__('System metrics'),
        trans.__('CPU, memory and GPU of this run in the MLflow UI')
      ),
      experiment: this._makeLink(
        'experiment',
        'jp-air-run-link-experiment',
        trans.__('Experiment'),
        trans.__('All runs of this experiment in the MLflow UI')
      )
    };
  }

  private _makeLink(
    kind: RunLinkKind,
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
      if (!isNewTabClick(event)) {
        event.preventDefault();
        this._actions.openLink(kind);
      }
    });
    return link;
  }

  private readonly _trans: TranslationBundle;
  private readonly _actions: IRunCardActions;
  private readonly _name: HTMLSpanElement;
  private readonly _status: StatusBadge;
  private readonly _duration: HTMLSpanElement;
  private readonly _experiment: HTMLSpanElement;
  private readonly _nested: HTMLSpanElement;
  private readonly _resumed: HTMLSpanElement;
  private readonly _links: Record<RunLinkKind, HTMLAnchorElement>;
  private readonly _panelButton: HTMLButtonElement;
  private readonly _workloadButton: HTMLButtonElement;
  private readonly _logsButton: HTMLButtonElement;
  private readonly _noUi: HTMLSpanElement;
}
