/**
 * Text formatting of GPU metrics for the panel. Every formatter takes the raw (possibly `null`)
 * value from the API and returns what the user reads; unknown values become "n/a", never "0".
 */

/** Shown for a metric the device cannot report. */
export const NA = 'n/a';

/** Shown where there is nothing (no process owner, no data yet). */
export const NONE = '—';

const MIB_PER_GIB = 1024;

function known(value: number | null | undefined): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** `87%`; `digits` decimals. */
export function formatPercent(
  value: number | null | undefined,
  digits = 0
): string {
  return known(value) ? `${value.toFixed(digits)}%` : NA;
}

/** MiB as GiB: `39.1 GiB`. */
export function formatGiB(mb: number | null | undefined, digits = 1): string {
  return known(mb) ? `${(mb / MIB_PER_GIB).toFixed(digits)} GiB` : NA;
}

/** Used / total memory from MiB: `39.1 / 79.6 GiB` (or `39.1 GiB` when the total is unknown). */
export function formatMemory(
  usedMb: number | null | undefined,
  totalMb: number | null | undefined
): string {
  if (!known(usedMb)) {
    return NA;
  }
  if (!known(totalMb)) {
    return formatGiB(usedMb);
  }
  const used = (usedMb / MIB_PER_GIB).toFixed(1);
  const total = (totalMb / MIB_PER_GIB).toFixed(1);
  return `${used} / ${total} GiB`;
}

/** `61 °C`. */
export function formatTemperature(celsius: number | null | undefined): string {
  return known(celsius) ? `${celsius.toFixed(0)} °C` : NA;
}

/** Power draw and limit: `512 / 700 W` (or `512 W` when the limit is unknown). */
export function formatPower(
  watts: number | null | undefined,
  limitW: number | null | undefined
): string {
  if (!known(watts)) {
    return NA;
  }
  return known(limitW)
    ? `${watts.toFixed(0)} / ${limitW.toFixed(0)} W`
    : `${watts.toFixed(0)} W`;
}

/** A duration in words: `5 minutes`, `1 hour`, `90 seconds`. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const unit = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  if (s >= 3600 && s % 3600 === 0) {
    return unit(s / 3600, 'hour');
  }
  if (s >= 60 && s % 60 === 0) {
    return unit(s / 60, 'minute');
  }
  return unit(s, 'second');
}

/** The age of the newest sample: `updated 3 s ago`, `updated 4 min ago`. */
export function formatAge(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) {
    return 'no data yet';
  }
  const s = Math.max(0, Math.floor(seconds));
  if (s < 120) {
    return `updated ${s} s ago`;
  }
  if (s < 7200) {
    return `updated ${Math.floor(s / 60)} min ago`;
  }
  return `updated ${Math.floor(s / 3600)} h ago`;
}
