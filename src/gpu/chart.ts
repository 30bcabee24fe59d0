/**
 * The seam between the GPU panel and the charting library.
 *
 * The panel describes each chart as a figure — one shared time axis, one line per GPU, the y
 * range, the unit and the theme's colours — and hands it to an `IChartRenderer`: the real one
 * (uplot-renderer.ts) draws on a canvas, tests pass a fake one (jsdom has no canvas) and can
 * inspect what would have been drawn.
 */
import { IChartTheme } from './theme';

/** One line of a chart: one GPU. */
export interface IChartLine {
  name: string;
  color: string;
  /** One value per x; `null` is a hole (a gap, an unknown value), never drawn as 0. */
  y: (number | null)[];
}

/** What one chart shows. */
export interface IChartFigure {
  /** Unix seconds, ascending, shared by every line. */
  x: number[];
  lines: IChartLine[];
  /** The y axis range; `null`: fit the data. */
  yRange: [number, number] | null;
  /** The unit of a value (`%`, `GiB`, `°C`) and how many decimals a value is shown with. */
  unit: string;
  digits: number;
  /** What a hole under the cursor reads ("n/a"). */
  missing: string;
  /** Height in CSS pixels. */
  height: number;
  theme: IChartTheme;
}

/** Draws charts into elements. */
export interface IChartRenderer {
  /**
   * Load what drawing needs. Optional: a renderer without it draws at once. The panel draws only
   * after this resolved, so that the first (full history) draw happens, and is timed, within the
   * panel's update rather than later on its own.
   */
  load?(): Promise<void>;
  /** Draw (or update in place) the chart in `el`. `el` is attached and visible. */
  render(el: HTMLElement, figure: IChartFigure): void;
  /** Fit the chart to its element's new size. */
  resize(el: HTMLElement): void;
  /** Remove the chart and free its resources. */
  purge(el: HTMLElement): void;
}

/**
 * A renderer whose code loads on first use (a separate chunk, not at JupyterLab's start): the
 * panel calls `load()` before its first draw.
 */
export function lazyRenderer(
  loader: () => Promise<IChartRenderer>
): IChartRenderer {
  let renderer: IChartRenderer | null = null;
  let loading: Promise<void> | null = null;
  return {
    load: () => {
      if (loading === null) {
        loading = loader()
          .then(loaded => loaded.load?.().then(() => loaded) ?? loaded)
          .then(loaded => {
            renderer = loaded;
          });
      }
      return loading;
    },
    render: (el, figure) => renderer?.render(el, figure),
    resize: el => renderer?.resize(el),
    purge: el => renderer?.purge(el)
  };
}
