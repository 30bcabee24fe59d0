/**
 * The GPU panel's render timing, as User Timing measures (visible in the browser's performance
 * tools, read by the browser benchmark in ui-tests/bench).
 *
 * One update's work can be split over several animation frames (the charts); `UpdateTimer`
 * adds up the pieces and records the total once the update is fully drawn, with an explicit
 * start and duration, so idle time between frames is not counted.
 */

/**
 * The User Timing measure of one panel update: the main-thread time spent rendering it (text,
 * cards, processes and the charts), from its start.
 */
export const RENDER_MEASURE = 'jupyter-air:gpu-render';
/**
 * The User Timing measure of each uninterrupted piece of that work (the text update; a chart
 * drawn in an animation frame): what a single frame has to absorb.
 */
export const RENDER_FRAME_MEASURE = 'jupyter-air:gpu-render-frame';
/** Drop old measures after this many so a panel open for days does not accumulate them. */
const MAX_MEASURES = 1000;

/** A high-resolution clock (ms). */
export function now(): number {
  return typeof performance !== 'undefined' &&
    typeof performance.now === 'function'
    ? performance.now()
    : Date.now();
}

const measureCounts = new Map<string, number>();

/** Record a User Timing measure with an explicit start and duration (where supported). */
export function record(name: string, start: number, duration: number): void {
  if (
    typeof performance === 'undefined' ||
    typeof performance.measure !== 'function'
  ) {
    return;
  }
  try {
    performance.measure(name, { start, duration });
  } catch {
    return; // User Timing Level 3 not supported: no figures, no harm
  }
  const count = (measureCounts.get(name) ?? 0) + 1;
  measureCounts.set(name, count);
  if (count > MAX_MEASURES && typeof performance.clearMeasures === 'function') {
    performance.clearMeasures(name);
    measureCounts.set(name, 0);
  }
}

/** Adds up the pieces of one update's rendering work and records the total. */
export class UpdateTimer {
  /** Run a piece of rendering work, adding its time to the update in progress. */
  timed(work: () => void): void {
    const start = now();
    if (this._update === null) {
      this._update = { start, duration: 0 };
    }
    try {
      work();
    } finally {
      const duration = now() - start;
      this._update.duration += duration;
      record(RENDER_FRAME_MEASURE, start, duration);
    }
  }

  /** The update is fully drawn: record its total time (nothing when none is in progress). */
  finish(): void {
    const update = this._update;
    if (update !== null) {
      this._update = null;
      record(RENDER_MEASURE, update.start, update.duration);
    }
  }

  private _update: { start: number; duration: number } | null = null;
}
