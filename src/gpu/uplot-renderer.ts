/**
 * The real chart renderer: uPlot, a small canvas time-series library.
 *
 * Why not plotly (which cell outputs keep using): the panel's budget is 16 ms of main-thread work
 * per frame at p95 with 8 GPUs × 720 points, and plotly's redraw of one such chart took 49 ms
 * (median, SVG `scatter`) and 60 ms (`scattergl`) per frame in the render benchmark
 * (ui-tests/bench/panel-render.spec.ts); a canvas redraw of the same data is a few milliseconds.
 *
 * A chart is built once per element and structure (its lines, unit, height and theme), and
 * updated in place with `setData` on every poll. Hovering shows the values of every GPU at that
 * time (text only, never HTML); dragging across zooms in time (kept across updates), a double
 * click zooms out. Kept apart from panel.ts so tests never load it (jsdom has no canvas).
 */
import uPlot from 'uplot';

import { h } from '../common/dom';
import { IChartFigure, IChartRenderer } from './chart';

/** A drawn chart and what its options were built from. */
interface IDrawn {
  plot: uPlot;
  key: string;
  /** The y range the scale reads on each redraw (`null`: fit the data). */
  range: [number, number] | null;
  /** The user zoomed in time: updates keep that window. */
  zoomed: boolean;
  hover: HTMLElement;
}

function pad2(n: number): string {
  return String(n).padStart(2, '0');
}

/** `14:03` or, over a short window, `14:03:05` (one line: a sidebar has no room for two). */
function clock(seconds: number, withSeconds: boolean): string {
  const d = new Date(seconds * 1000);
  const hm = `${pad2(d.getHours())}:${pad2(d.getMinutes())}`;
  return withSeconds ? `${hm}:${pad2(d.getSeconds())}` : hm;
}

/** What changes a chart's options (anything else is data). */
function structureKey(figure: IChartFigure): string {
  return JSON.stringify([
    figure.lines.map(line => [line.name, line.color]),
    figure.unit,
    figure.digits,
    figure.missing,
    figure.height,
    figure.theme
  ]);
}

/** Draws the GPU panel's charts with uPlot. */
export class UplotRenderer implements IChartRenderer {
  render(el: HTMLElement, figure: IChartFigure): void {
    const data = [
      figure.x,
      ...figure.lines.map(line => line.y)
    ] as uPlot.AlignedData;
    const key = structureKey(figure);
    const drawn = this._drawn.get(el);
    el.dataset.lines = String(figure.lines.length);
    el.dataset.points = String(figure.x.length);
    if (drawn && drawn.key === key) {
      drawn.range = figure.yRange;
      drawn.plot.setData(data, !drawn.zoomed);
      return;
    }
    this.purge(el);
    this._create(el, figure, key, data);
  }

  resize(el: HTMLElement): void {
    const drawn = this._drawn.get(el);
    if (drawn && el.isConnected && el.clientWidth > 0) {
      drawn.plot.setSize({ width: el.clientWidth, height: drawn.plot.height });
    }
  }

  purge(el: HTMLElement): void {
    const drawn = this._drawn.get(el);
    if (drawn) {
      this._drawn.delete(el);
      drawn.plot.destroy();
    }
  }

  private _create(
    el: HTMLElement,
    figure: IChartFigure,
    key: string,
    data: uPlot.AlignedData
  ): void {
    const theme = figure.theme;
    const font = `10px ${theme.fontFamily}`;
    const hover = h('div', 'jp-air-gpu-chart-hover');
    hover.hidden = true;
    const drawn: IDrawn = {
      plot: null as unknown as uPlot,
      key,
      range: figure.yRange,
      zoomed: false,
      hover
    };
    const axis = {
      stroke: theme.fontMuted,
      font,
      grid: { stroke: theme.grid, width: 1 },
      ticks: { stroke: theme.line, width: 1, size: 3 }
    };
    const options: uPlot.Options = {
      width: Math.max(el.clientWidth, 100),
      height: figure.height,
      legend: { show: false },
      padding: [6, 8, 0, 0],
      cursor: {
        drag: { x: true, y: false },
        y: false,
        points: { size: 5 }
      },
      scales: {
        x: { time: true },
        y: {
          range: (_u, min, max) => {
            if (drawn.range) {
              return drawn.range;
            }
            if (min === null || max === null) {
              return [0, 1];
            }
            return uPlot.rangeNum(min, max, 0.1, true);
          }
        }
      },
      axes: [
        {
          ...axis,
          space: 60,
          values: (u, splits) => {
            const span = (u.scales.x.max ?? 0) - (u.scales.x.min ?? 0);
            return splits.map(s => clock(s, span < 600));
          }
        },
        { ...axis, size: 36 }
      ],
      series: [
        {},
        ...figure.lines.map(line => ({
          label: line.name,
          stroke: line.color,
          width: 1.5,
          spanGaps: false,
          points: { show: false }
        }))
      ],
      hooks: {
        setSelect: [
          u => {
            if (u.select.width > 0) {
              drawn.zoomed = true;
            }
          }
        ],
        setCursor: [u => this._hover(u, figure, hover)]
      }
    };
    drawn.plot = new uPlot(options, data, el);
    drawn.plot.over.append(hover);
    drawn.plot.over.addEventListener('dblclick', () => {
      drawn.zoomed = false;
    });
    this._drawn.set(el, drawn);
  }

  /** The values of every line at the cursor, next to it. */
  private _hover(u: uPlot, figure: IChartFigure, hover: HTMLElement): void {
    const idx = u.cursor.idx;
    if (
      idx === null ||
      idx === undefined ||
      u.cursor.left === undefined ||
      u.cursor.left < 0
    ) {
      hover.hidden = true;
      return;
    }
    const t = u.data[0][idx];
    const rows: HTMLElement[] = [
      h('div', 'jp-air-gpu-chart-hover-time', clock(t, true))
    ];
    u.series.forEach((series, s) => {
      if (s === 0) {
        return;
      }
      const value = u.data[s][idx];
      const row = h('div', 'jp-air-gpu-chart-hover-row');
      const swatch = h('span', 'jp-air-gpu-swatch');
      swatch.style.backgroundColor = String(series.stroke);
      const text =
        value === null || value === undefined
          ? `${series.label}: ${figure.missing}`
          : `${series.label}: ${value.toFixed(figure.digits)} ${figure.unit}`;
      row.append(swatch, h('span', undefined, text));
      rows.push(row);
    });
    hover.replaceChildren(...rows);
    hover.hidden = false;
    // beside the cursor, on the side with room
    const left = u.cursor.left;
    const right = left > u.over.clientWidth / 2;
    hover.style.left = right ? '' : `${left + 8}px`;
    hover.style.right = right ? `${u.over.clientWidth - left + 8}px` : '';
  }

  private readonly _drawn = new Map<HTMLElement, IDrawn>();
}
