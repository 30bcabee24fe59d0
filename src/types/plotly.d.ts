/**
 * The few parts of plotly.js (basic bundle, `plotly.js-basic-dist-min`, which ships no types)
 * that jupyter-air uses.
 */
declare module 'plotly.js-basic-dist-min' {
  export interface IPlotlyStatic {
    react(
      root: HTMLElement,
      data: Record<string, unknown>[],
      layout?: Record<string, unknown>,
      config?: Record<string, unknown>
    ): Promise<HTMLElement>;
    purge(root: HTMLElement): void;
    Plots: {
      resize(root: HTMLElement): Promise<void> | void;
    };
  }
  const Plotly: IPlotlyStatic;
  export default Plotly;
}
