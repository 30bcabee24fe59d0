/**
 * Timer functions, injectable so that jest can drive the models and pollers with fake timers.
 *
 * Shared by the GPU model, the MLflow poller (Experiment panel, MLflow tab) and their options.
 */

/** Timer functions (injectable for tests). */
export interface ITimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The window's timers. */
export const windowTimers: ITimers = {
  setTimeout: (callback, ms) => window.setTimeout(callback, ms),
  clearTimeout: handle => window.clearTimeout(handle as number)
};
