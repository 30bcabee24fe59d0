/**
 * Render timing as User Timing measures (visible in the browser's performance tools, read by the
 * browser benchmarks in ui-tests/bench): the GPU panel measures each update, the Logs view each
 * rendering of its rows.
 */

/** Drop old measures after this many so a view open for days does not accumulate them. */
const MAX_MEASURES = 1000;

/** A high-resolution clock (ms). */
export function now(): number {
  return typeof performance !== 'undefined' &&
    typeof performance.now === 'function'
    ? performance.now()
    : Date.now();
}

const measureCounts = new Map<string, number>();

/**
 * Record a User Timing measure with an explicit start and duration (where supported), and what
 * it measured (`detail`) when given.
 */
export function record(
  name: string,
  start: number,
  duration: number,
  detail?: string
): void {
  if (
    typeof performance === 'undefined' ||
    typeof performance.measure !== 'function'
  ) {
    return;
  }
  try {
    performance.measure(
      name,
      detail === undefined ? { start, duration } : { start, duration, detail }
    );
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
