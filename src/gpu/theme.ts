/**
 * The GPU panel's colours: one fixed colour per GPU (its card swatch and its lines in every
 * chart) and the chart colours read from JupyterLab's theme variables, so the charts
 * follow light and dark themes.
 */

/** Trace colours, one per GPU index (readable on light and dark backgrounds). */
export const GPU_COLORS = [
  '#4e79a7',
  '#f28e2b',
  '#e15759',
  '#76b7b2',
  '#59a14f',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac'
];

/** The colour of a GPU's lines and card swatch. */
export function gpuColor(index: number): string {
  return GPU_COLORS[
    ((index % GPU_COLORS.length) + GPU_COLORS.length) % GPU_COLORS.length
  ];
}

/** Chart colours taken from JupyterLab's theme variables. */
export interface IChartTheme {
  font: string;
  fontMuted: string;
  fontFamily: string;
  background: string;
  grid: string;
  line: string;
  hoverBackground: string;
}

/** Read the chart colours from the current JupyterLab theme's CSS variables. */
export function readChartTheme(element: Element = document.body): IChartTheme {
  const style = window.getComputedStyle(element);
  const css = (name: string, fallback: string) =>
    style.getPropertyValue(name).trim() || fallback;
  return {
    font: css('--jp-ui-font-color1', '#212121'),
    fontMuted: css('--jp-ui-font-color2', '#616161'),
    fontFamily: css(
      '--jp-ui-font-family',
      'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif'
    ),
    background: css('--jp-layout-color0', '#ffffff'),
    grid: css('--jp-border-color2', '#e0e0e0'),
    line: css('--jp-border-color1', '#bdbdbd'),
    hoverBackground: css('--jp-layout-color2', '#eeeeee')
  };
}
