/**
 * The GPU panel's history charts: utilisation, memory and temperature over the history window,
 * one line per GPU, drawn through `IChartRenderer` (a canvas in the app, a fake in tests).
 *
 * Drawing is the expensive part of an update, so it is scheduled here: only when the panel is
 * visible, only charts whose data or theme changed, one chart per animation frame, each piece
 * timed as part of the update in progress. The series are built once per change of samples and
 * thinned, when there are more than two points per pixel of the plot, keeping every peak.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { h } from '../common/dom';
import { IChartRenderer } from './chart';
import { CHART_HEIGHT, digitsOf, yRange } from './chart-layout';
import { notAvailable } from './format';
import { GpuModel, hasGpuData } from './model';
import {
  GpuMetric,
  ISeries,
  METRICS,
  METRIC_ORDER,
  bucketFor,
  buildAllSeries,
  thinAligned
} from './series';
import { IChartTheme, gpuColor } from './theme';
import { UpdateTimer } from './timing';

/** The three charts. */
export class ChartsView {
  constructor(options: ChartsView.IOptions) {
    this._model = options.model;
    this._trans = options.trans;
    this._renderer = options.renderer;
    this._timer = options.timer;
    this._canShow = options.canShow;
    this._themeReader = options.readTheme;
    this._scheduleFrame = options.scheduleFrame;
    this._loaded = !this._renderer?.load;

    this.node = h('div', 'jp-air-gpu-charts');
    for (const metric of METRIC_ORDER) {
      const box = h('div', 'jp-air-gpu-chart');
      box.dataset.metric = metric;
      const title = h(
        'h3',
        'jp-air-gpu-chart-title jp-air-gpu-section-title',
        METRICS[metric].title(options.trans)
      );
      const plot = h('div', 'jp-air-gpu-chart-plot');
      box.append(title, plot);
      this.node.append(box);
      this._plots[metric] = plot;
    }
  }

  /** The charts' container. */
  readonly node: HTMLElement;

  /** The element one chart is drawn in. */
  chartElement(metric: GpuMetric): HTMLElement {
    return this._plots[metric];
  }

  /** Forget the theme colours and redraw in the current ones. */
  themeChanged(): void {
    this._theme = null;
    this._themeVersion++;
    this.render();
  }

  /** Fit the drawn charts to their new size, then redraw what is stale. */
  resize(): void {
    this._width = null;
    if (!this._renderer || !this._canShow()) {
      return;
    }
    for (const metric of METRIC_ORDER) {
      if (this._drawn[metric]) {
        this._renderer.resize(this._plots[metric]);
      }
    }
    this.render();
  }

  /**
   * Draw the stale charts, one per animation frame; when none is left (or none can be drawn),
   * close the update in progress.
   */
  render(): void {
    if (
      !this._canDraw() ||
      !METRIC_ORDER.some(metric => this._isStale(metric))
    ) {
      this._timer.finish();
      return;
    }
    if (!this._loaded) {
      this._load(); // the update stays open: its charts are drawn once the renderer is here
      return;
    }
    if (this._framePending) {
      return;
    }
    this._framePending = true;
    this._scheduleFrame(() => {
      this._framePending = false;
      this._drawNext();
    });
  }

  /** Remove the charts and free their resources. */
  dispose(): void {
    if (this._renderer) {
      for (const metric of METRIC_ORDER) {
        this._renderer.purge(this._plots[metric]);
      }
    }
  }

  /** Load the renderer once, then draw what is stale. */
  private _load(): void {
    if (this._loading) {
      return;
    }
    this._loading = true;
    void this._renderer!.load!().then(
      () => {
        this._loaded = true;
        this.render();
      },
      reason => {
        console.warn('jupyter-air: cannot load the chart library', reason);
        this._renderer = null;
        this.render();
      }
    );
  }

  /** Whether a chart does not show the current data and theme. */
  private _isStale(metric: GpuMetric): boolean {
    const drawn = this._drawn[metric];
    return (
      !drawn ||
      drawn.samples !== this._model.samplesVersion ||
      drawn.theme !== this._themeVersion
    );
  }

  /** Whether the charts can be drawn now (a hidden element has no size to draw at). */
  private _canDraw(): boolean {
    return (
      !!this._renderer &&
      this._canShow() &&
      this._model.view === 'node' &&
      hasGpuData(this._model.payload)
    );
  }

  /** Draw the next stale chart (round robin, so a fast stream of updates starves none). */
  private _drawNext(): void {
    if (!this._canDraw()) {
      this._timer.finish();
      return;
    }
    for (let k = 0; k < METRIC_ORDER.length; k++) {
      const metric = METRIC_ORDER[(this._next + k) % METRIC_ORDER.length];
      if (this._isStale(metric)) {
        this._next = (METRIC_ORDER.indexOf(metric) + 1) % METRIC_ORDER.length;
        this._timer.timed(() => this._draw(metric), metric);
        break;
      }
    }
    this.render();
  }

  /** Draw one chart from the current samples. */
  private _draw(metric: GpuMetric): void {
    const renderer = this._renderer as IChartRenderer;
    const payload = this._model.payload!;
    const plot = this._plots[metric];
    const samples = this._model.samples;
    const series = this._series();
    const theme = this._theme ?? (this._theme = this._themeReader());
    const lines = series[metric];
    // at most two points per pixel: more cannot be seen and only costs drawing time
    const bucketS = bucketFor(
      samples.length,
      this._model.intervalS,
      this._plotWidth()
    );
    const x = lines.length ? lines[0].x : [];
    const thinned = thinAligned(
      x,
      lines.map(line => line.y),
      bucketS
    );
    renderer.render(plot, {
      x: thinned.x,
      lines: lines.map((line, i) => ({
        name: this._trans.__('GPU %1', line.gpuIndex),
        color: gpuColor(line.gpuIndex),
        y: thinned.ys[i]
      })),
      yRange: yRange(metric, payload.devices ?? [], samples),
      unit: METRICS[metric].unit(this._trans),
      digits: digitsOf(metric),
      missing: notAvailable(this._trans),
      height: CHART_HEIGHT,
      theme
    });
    this._drawn[metric] = {
      samples: this._model.samplesVersion,
      theme: this._themeVersion
    };
  }

  /**
   * The plots' width, read once after each resize: reading it on every draw would force the
   * browser to lay out the panel's other changes in the middle of the frame.
   */
  private _plotWidth(): number {
    if (this._width === null || this._width <= 0) {
      this._width = this._plots.util.clientWidth;
    }
    return this._width;
  }

  /** The chart series of the current samples (computed once per change of samples). */
  private _series(): Record<GpuMetric, ISeries[]> {
    const version = this._model.samplesVersion;
    const intervalS = this._model.intervalS;
    const cache = this._seriesCache;
    if (cache && cache.version === version && cache.intervalS === intervalS) {
      return cache.series;
    }
    const series = buildAllSeries(this._model.samples, intervalS);
    this._seriesCache = { version, intervalS, series };
    return series;
  }

  private readonly _model: GpuModel;
  private readonly _trans: TranslationBundle;
  private _renderer: IChartRenderer | null;
  private readonly _timer: UpdateTimer;
  private readonly _canShow: () => boolean;
  private readonly _themeReader: () => IChartTheme;
  private readonly _scheduleFrame: (callback: () => void) => void;
  private readonly _plots = {} as Record<GpuMetric, HTMLElement>;
  private _theme: IChartTheme | null = null;
  private _width: number | null = null;
  private _themeVersion = 0;
  private _drawn: Partial<
    Record<GpuMetric, { samples: number; theme: number }>
  > = {};
  private _next = 0;
  private _framePending = false;
  private _loaded: boolean;
  private _loading = false;
  private _seriesCache: {
    version: number;
    intervalS: number;
    series: Record<GpuMetric, ISeries[]>;
  } | null = null;
}

export namespace ChartsView {
  export interface IOptions {
    /** Where the samples come from. */
    model: GpuModel;
    /** The panel's strings. */
    trans: TranslationBundle;
    /** Draws the charts; `null`: no charts. */
    renderer: IChartRenderer | null;
    /** The timer of the panel's updates (chart drawing is part of an update). */
    timer: UpdateTimer;
    /** Whether the charts are on screen (the panel is visible and not disposed). */
    canShow: () => boolean;
    /** Reads the chart colours. */
    readTheme: () => IChartTheme;
    /** Runs a callback before the next frame. */
    scheduleFrame: (callback: () => void) => void;
  }
}
