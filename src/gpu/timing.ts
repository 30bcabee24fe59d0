/**
 * The GPU panel's render timing, as User Timing measures (see common/timing.ts).
 *
 * One update's work can be split over several animation frames (the charts); `UpdateTimer`
 * adds up the pieces and records the total once the update is fully drawn, with an explicit
 * start and duration, so idle time between frames is not counted.
 */
import { now, record } from '../common/timing';

/**
 * The User Timing measure of one panel update: the main-thread time spent rendering it (text,
 * cards, processes and the charts), from its start.
 */
export const RENDER_MEASURE = 'jupyter-air:gpu-render';
/**
 * The User Timing measure of each uninterrupted piece of that work (the text update; a chart
 * drawn in an animation frame): what a single frame has to absorb. Its `detail` says which
 * piece: `text`, or the chart's metric.
 */
export const RENDER_FRAME_MEASURE = 'jupyter-air:gpu-render-frame';

/** Adds up the pieces of one update's rendering work and records the total. */
export class UpdateTimer {
  /** Run a piece of rendering work (`piece` names it), adding its time to the update. */
  timed(work: () => void, piece = 'text'): void {
    const start = now();
    if (this._update === null) {
      this._update = { start, duration: 0 };
    }
    try {
      work();
    } finally {
      const duration = now() - start;
      this._update.duration += duration;
      record(RENDER_FRAME_MEASURE, start, duration, piece);
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
