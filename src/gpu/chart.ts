/**
 * The seam between the GPU panel and the charting library.
 *
 * The panel describes charts as plain traces and a layout and hands them to an `IChartRenderer`;
 * the real one (plotly-renderer.ts) draws with plotly, tests pass a fake one (plotly cannot draw
 * in jsdom) and can inspect what would have been drawn.
 */

/** One line of a chart (a subset of a plotly scatter trace). */
export interface IChartTrace {
  type: 'scatter';
  mode: 'lines';
  name: string;
  x: Date[];
  y: (number | null)[];
  connectgaps: false;
  line: { color: string; width: number };
  hovertemplate?: string;
}

/** A chart's layout (a subset of plotly's). */
export interface IChartLayout {
  height: number;
  margin: { l: number; r: number; t: number; b: number; pad?: number };
  paper_bgcolor: string;
  plot_bgcolor: string;
  font: { color: string; family: string; size: number };
  showlegend: boolean;
  hovermode: 'x unified' | 'closest' | 'x';
  hoverlabel?: Record<string, unknown>;
  uirevision: string;
  xaxis: Record<string, unknown>;
  yaxis: Record<string, unknown>;
}

/** Draws charts into elements. */
export interface IChartRenderer {
  /**
   * Load what drawing needs (plotly is loaded on first use). Optional: a renderer without it
   * draws at once. The panel draws only after this resolved, so that the first (full history)
   * draw happens, and is timed, within the panel's update rather than later on its own.
   */
  load?(): Promise<void>;
  /** Draw (or update in place) the chart in `el`. `el` is attached and visible. */
  render(el: HTMLElement, traces: IChartTrace[], layout: IChartLayout): void;
  /** Fit the chart to its element's new size. */
  resize(el: HTMLElement): void;
  /** Remove the chart and free its resources. */
  purge(el: HTMLElement): void;
}
