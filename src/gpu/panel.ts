/**
 * The "GPU Resources" side panel: what the GPUs (and the host) of a node are doing now, over
 * the history window, and which notebooks and runs use them; with more than one node, first an
 * overview of every node, from which a node's own view opens.
 *
 * This module composes the panel's views (header and banners, node selector, overview, host
 * metrics, GPU cards, charts, processes table) and ties them to the widget's life cycle: the
 * model polls while the panel is shown, every model change re-renders the views in place, and
 * each update is measured as `jupyter-air:gpu-render` (see timing.ts).
 *
 * Plain DOM, built once with `createElement`/`textContent` (data — node names, process commands,
 * notebook paths — is never parsed as HTML) and updated in place on every poll.
 */
import { ITranslator } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { setHidden } from '../common/dom';
import { Poller } from '../common/poller';
import { ShownWidget } from '../common/shown-widget';
import { loadTranslation } from '../common/translation';
import { GpuCards } from './cards';
import { IChartRenderer } from './chart';
import { ChartsView } from './charts-view';
import { PanelHeader } from './header';
import { HostMetrics } from './host-metrics';
import { GpuModel, hasGpuData } from './model';
import { NodeNav } from './node-nav';
import { NodesOverview } from './overview';
import { ProcessesTable } from './processes-table';
import { IRunLinker } from './run-links';
import { GpuMetric } from './series';
import { IChartTheme, readChartTheme } from './theme';
import { UpdateTimer } from './timing';

/** Milliseconds between updates of "updated N s ago". */
const CLOCK_MS = 1000;

/** The "GPU Resources" panel. */
export class GpuPanel extends ShownWidget {
  constructor(options: GpuPanel.IOptions = {}) {
    super();
    this.addClass('jp-air-gpu');
    this.addClass('jp-air-sidepanel');
    this._model = options.model ?? new GpuModel();
    this._ownsModel = !options.model;
    const trans = loadTranslation(options.translator);
    this.title.caption = trans.__('GPU Resources');

    this._header = new PanelHeader(this._model, trans);
    this._nav = new NodeNav(this._model, trans);
    this._overview = new NodesOverview(trans, node =>
      this._model.setNode(node)
    );
    this._host = new HostMetrics(trans);
    this._cards = new GpuCards(trans);
    this._charts = new ChartsView({
      model: this._model,
      trans,
      renderer: options.renderer ?? null,
      timer: this._timer,
      canShow: () => !this.isDisposed && this.isVisible,
      readTheme: options.readTheme ?? (() => readChartTheme()),
      scheduleFrame:
        options.scheduleFrame ??
        (callback => {
          window.requestAnimationFrame(() => callback());
        })
    });
    this._processes = new ProcessesTable(
      trans,
      options.openPath ?? null,
      options.linker ?? null
    );
    this._clock = new Poller({
      name: 'jupyter-air:gpu-clock',
      poll: () => this._header.renderAge(),
      interval: CLOCK_MS
    });
    this.node.append(
      this._header.header,
      this._nav.node,
      this._header.meta,
      ...this._header.banners,
      this._overview.node,
      this._host.node,
      this._cards.node,
      this._charts.node,
      this._processes.node,
      this._header.held
    );

    this._model.changed.connect(this._onModelChanged, this);
    this.render();
  }

  /** The model behind the panel. */
  get model(): GpuModel {
    return this._model;
  }

  /** The element of one chart (for tests and the benchmark). */
  chartElement(metric: GpuMetric): HTMLElement {
    return this._charts.chartElement(metric);
  }

  /**
   * Re-read the theme colours and redraw the charts (call on JupyterLab theme changes).
   */
  themeChanged(): void {
    this._charts.themeChanged();
  }

  /**
   * Update the panel from the model: text, overview, cards and processes now, then the charts
   * that are out of date, one per animation frame (so no frame has to absorb all three redraws).
   * Measured as `jupyter-air:gpu-render`.
   */
  render(): void {
    this._timer.timed(() => {
      const model = this._model;
      const overview = model.view === 'overview';
      this._header.render();
      this._nav.render();
      setHidden(this._overview.node, !overview);
      if (overview && this._overviewDrawn !== model.overviewVersion) {
        this._overview.render(model.nodes);
        this._overviewDrawn = model.overviewVersion;
      }
      const payload = overview ? null : model.payload;
      const latest = payload ? model.latest : null;
      const hasGpus = hasGpuData(payload);
      setHidden(this._cards.node, !hasGpus);
      setHidden(this._charts.node, !hasGpus);
      setHidden(this._processes.node, !hasGpus);
      setHidden(this._host.node, !payload);
      if (payload) {
        this._host.render(latest);
        this._cards.render(payload, latest);
        this._processes.render(latest);
      }
      this._header.renderAge();
    });
    this._charts.render();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._clock.dispose();
    this._model.changed.disconnect(this._onModelChanged, this);
    this._model.stop();
    this._charts.dispose();
    if (this._ownsModel) {
      this._model.dispose();
    }
    super.dispose();
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    super.onResize(msg);
    this._charts.resize();
  }

  protected onShown(): void {
    this._model.start();
    this._clock.start(CLOCK_MS);
    this._header.renderAge();
    this._charts.resize(); // its size may have changed while hidden
  }

  protected onHidden(): void {
    this._model.stop();
    this._clock.stop();
  }

  private _onModelChanged(): void {
    this.render();
  }

  private readonly _model: GpuModel;
  private readonly _ownsModel: boolean;
  private readonly _timer = new UpdateTimer();
  private readonly _header: PanelHeader;
  private readonly _nav: NodeNav;
  private readonly _overview: NodesOverview;
  private _overviewDrawn = -1;
  private readonly _host: HostMetrics;
  private readonly _cards: GpuCards;
  private readonly _charts: ChartsView;
  private readonly _processes: ProcessesTable;
  private readonly _clock: Poller;
}

export namespace GpuPanel {
  export interface IOptions {
    /** The model (default: a new one on the real API, disposed with the panel). */
    model?: GpuModel;
    /** Draws the charts; without one the panel has no charts. */
    renderer?: IChartRenderer;
    /** Translates the panel's strings (default: as written). */
    translator?: ITranslator | null;
    /** Opens a notebook path (e.g. `docmanager:open`); without it paths are plain text. */
    openPath?: (path: string) => void;
    /** Builds the links to runs and job runs; without it they are plain text. */
    linker?: IRunLinker;
    /** Reads the chart colours (default: JupyterLab's CSS variables). */
    readTheme?: () => IChartTheme;
    /** Runs a callback before the next frame (default: `requestAnimationFrame`). */
    scheduleFrame?: (callback: () => void) => void;
  }
}
