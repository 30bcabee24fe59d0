/**
 * What every view's text shares: the mark of an empty value, and the number test that keeps an
 * unknown value from showing as 0 (API fields may be missing, `null` or of the wrong type).
 */

/** Shown where there is nothing (no value, no owner, no data yet). */
export const NONE = '—';

/** A finite number when it is one, else `null`. */
export function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}
