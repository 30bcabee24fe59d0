/**
 * The real chart renderer: plotly.js (basic bundle).
 *
 * plotly is about 1 MB, so it is loaded on first use (a separate chunk), not when JupyterLab
 * starts. Updates use `Plotly.react`, which diffs against the previous figure instead of
 * rebuilding the plot. Kept apart from panel.ts so tests never load plotly (it cannot draw in
 * jsdom).
 */
import type { IPlotlyStatic } from 'plotly.js-basic-dist-min';

import { IChartLayout, IChartRenderer, IChartTrace } from './chart';

const CONFIG = {
  responsive: true,
  displayModeBar: false,
  displaylogo: false,
  scrollZoom: false,
  doubleClick: 'reset'
};

let loading: Promise<IPlotlyStatic> | null = null;

/** Load plotly once. */
function loadPlotly(): Promise<IPlotlyStatic> {
  if (!loading) {
    loading = import('plotly.js-basic-dist-min').then(module => {
      const loaded = module as unknown as {
        default?: IPlotlyStatic;
      } & IPlotlyStatic;
      return loaded.default ?? loaded;
    });
  }
  return loading;
}

/** Draws charts with plotly. */
export class PlotlyRenderer implements IChartRenderer {
  load(): Promise<void> {
    return loadPlotly().then(plotly => {
      this._plotly = plotly;
    });
  }

  render(el: HTMLElement, traces: IChartTrace[], layout: IChartLayout): void {
    if (this._plotly) {
      this._drawn.add(el);
      void this._plotly.react(
        el,
        traces as unknown as Record<string, unknown>[],
        layout as unknown as Record<string, unknown>,
        CONFIG
      );
      return;
    }
    // first use: remember the newest figure per element and draw it once plotly is here
    this._pending.set(el, { traces, layout });
    void loadPlotly().then(plotly => {
      this._plotly = plotly;
      const pending = Array.from(this._pending.entries());
      this._pending.clear();
      for (const [target, figure] of pending) {
        if (target.isConnected) {
          this.render(target, figure.traces, figure.layout);
        }
      }
    });
  }

  resize(el: HTMLElement): void {
    if (
      this._plotly &&
      this._drawn.has(el) &&
      el.isConnected &&
      el.offsetWidth > 0
    ) {
      void Promise.resolve(this._plotly.Plots.resize(el)).catch(() => {
        // the plot was removed meanwhile: nothing to fit
      });
    }
  }

  purge(el: HTMLElement): void {
    this._pending.delete(el);
    if (this._plotly && this._drawn.delete(el)) {
      this._plotly.purge(el);
    }
  }

  private _plotly: IPlotlyStatic | null = null;
  private _drawn = new Set<HTMLElement>();
  private _pending = new Map<
    HTMLElement,
    { traces: IChartTrace[]; layout: IChartLayout }
  >();
}
