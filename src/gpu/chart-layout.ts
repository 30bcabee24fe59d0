/**
 * The plotly layout of the GPU panel's charts, in the theme's colours and sized for a sidebar,
 * and the memory chart's scale.
 */
import { IChartLayout } from './chart';
import { GpuMetric } from './series';
import { IChartTheme } from './theme';
import { IGpuDevice, ISample } from './types';

/** The memory chart's y maximum: the largest GPU's memory in GiB (null: let plotly decide). */
export function memoryAxisMax(
  devices: readonly IGpuDevice[],
  samples: readonly ISample[]
): number | null {
  let max = 0;
  for (const device of devices) {
    max = Math.max(max, device.mem_total_mb ?? 0);
  }
  if (max <= 0 && samples.length) {
    for (const gpu of samples[samples.length - 1].gpus) {
      max = Math.max(max, gpu.mem_total_mb ?? 0);
    }
  }
  return max > 0 ? max / 1024 : null;
}

/** A chart layout in the theme's colours. */
export function chartLayout(
  theme: IChartTheme,
  metric: GpuMetric,
  range?: number[]
): IChartLayout {
  const axis = {
    gridcolor: theme.grid,
    linecolor: theme.line,
    zeroline: false,
    tickfont: { color: theme.fontMuted, size: 10 },
    fixedrange: false
  };
  return {
    height: 150,
    margin: { l: 36, r: 8, t: 6, b: 24, pad: 2 },
    paper_bgcolor: theme.background,
    plot_bgcolor: theme.background,
    font: { color: theme.font, family: theme.fontFamily, size: 11 },
    showlegend: false,
    hovermode: 'x',
    hoverlabel: {
      bgcolor: theme.hoverBackground,
      bordercolor: theme.line,
      font: { color: theme.font, family: theme.fontFamily, size: 11 }
    },
    uirevision: metric,
    xaxis: {
      ...axis,
      type: 'date',
      nticks: 4,
      tickangle: 0,
      // one-line time labels: a sidebar has no room for plotly's two-line date labels
      tickformatstops: [
        { dtickrange: [null, 60000], value: '%H:%M:%S' },
        { dtickrange: [60000, 86400000], value: '%H:%M' },
        { dtickrange: [86400000, null], value: '%b %d' }
      ],
      hoverformat: '%H:%M:%S'
    },
    yaxis: {
      ...axis,
      fixedrange: true,
      ...(range ? { range, autorange: false } : { autorange: true }),
      ticksuffix: metric === 'util' ? '%' : ''
    }
  };
}
