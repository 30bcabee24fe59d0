/**
 * Text formatting of GPU metrics for the panel. Every formatter takes the raw (possibly `null`)
 * value from the API and returns what the user reads, in the panel's language; unknown values
 * become "n/a", never "0".
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { num } from '../common/text';

const MIB_PER_GIB = 1024;

/** Shown for a metric the device cannot report. */
export function notAvailable(trans: TranslationBundle): string {
  return trans.__('n/a');
}

/**
 * A whole-number value against its limit, both divided by `scale` first: `withLimit`'s text,
 * `alone`'s when the limit is unknown, "n/a" when the value is.
 */
function againstLimit(
  trans: TranslationBundle,
  value: number | null | undefined,
  limit: number | null | undefined,
  alone: (value: string) => string,
  withLimit: (value: string, limit: string) => string,
  scale = 1
): string {
  const v = num(value);
  const max = num(limit);
  if (v === null) {
    return notAvailable(trans);
  }
  const whole = (x: number) => (x / scale).toFixed(0);
  return max === null ? alone(whole(v)) : withLimit(whole(v), whole(max));
}

/** `87%`; `digits` decimals. */
export function formatPercent(
  trans: TranslationBundle,
  value: number | null | undefined,
  digits = 0
): string {
  const v = num(value);
  return v === null ? notAvailable(trans) : trans.__('%1%', v.toFixed(digits));
}

/** MiB as GiB: `39.1 GiB`. */
export function formatGiB(
  trans: TranslationBundle,
  mb: number | null | undefined,
  digits = 1
): string {
  const v = num(mb);
  return v === null
    ? notAvailable(trans)
    : trans.__('%1 GiB', (v / MIB_PER_GIB).toFixed(digits));
}

/** Used / total memory from MiB: `39.1 / 79.6 GiB` (or `39.1 GiB` when the total is unknown). */
export function formatMemory(
  trans: TranslationBundle,
  usedMb: number | null | undefined,
  totalMb: number | null | undefined
): string {
  const used = num(usedMb);
  const total = num(totalMb);
  if (used === null || total === null) {
    return formatGiB(trans, used);
  }
  return trans.__(
    '%1 / %2 GiB',
    (used / MIB_PER_GIB).toFixed(1),
    (total / MIB_PER_GIB).toFixed(1)
  );
}

/** `61 °C`. */
export function formatTemperature(
  trans: TranslationBundle,
  celsius: number | null | undefined
): string {
  const v = num(celsius);
  return v === null ? notAvailable(trans) : trans.__('%1 °C', v.toFixed(0));
}

/** Power draw and limit: `512 / 700 W` (or `512 W` when the limit is unknown). */
export function formatPower(
  trans: TranslationBundle,
  watts: number | null | undefined,
  limitW: number | null | undefined
): string {
  return againstLimit(
    trans,
    watts,
    limitW,
    w => trans.__('%1 W', w),
    (w, limit) => trans.__('%1 / %2 W', w, limit)
  );
}

/** A duration in words: `5 minutes`, `1 hour`, `90 seconds`. */
export function formatDuration(
  trans: TranslationBundle,
  seconds: number
): string {
  const s = Math.max(0, Math.round(seconds));
  if (s >= 3600 && s % 3600 === 0) {
    return trans._n('%1 hour', '%1 hours', s / 3600);
  }
  if (s >= 60 && s % 60 === 0) {
    return trans._n('%1 minute', '%1 minutes', s / 60);
  }
  return trans._n('%1 second', '%1 seconds', s);
}

/** The age of the newest sample: `updated 3 s ago`, `updated 4 min ago`. */
export function formatAge(
  trans: TranslationBundle,
  seconds: number | null
): string {
  if (seconds === null || !Number.isFinite(seconds)) {
    return trans.__('no data yet');
  }
  const s = Math.max(0, Math.floor(seconds));
  if (s < 120) {
    return trans.__('updated %1 s ago', s);
  }
  if (s < 7200) {
    return trans.__('updated %1 min ago', Math.floor(s / 60));
  }
  return trans.__('updated %1 h ago', Math.floor(s / 3600));
}

/** A count, or "n/a" when unknown. */
export function formatCount(
  trans: TranslationBundle,
  value: number | null | undefined
): string {
  const v = num(value);
  return v === null ? notAvailable(trans) : String(Math.round(v));
}

/** A clock against its maximum: `1410 / 1980 MHz` (or `1410 MHz` when the maximum is unknown). */
export function formatClock(
  trans: TranslationBundle,
  mhz: number | null | undefined,
  maxMhz: number | null | undefined
): string {
  return againstLimit(
    trans,
    mhz,
    maxMhz,
    v => trans.__('%1 MHz', v),
    (v, max) => trans.__('%1 / %2 MHz', v, max)
  );
}

function pad2(n: number): string {
  return String(n).padStart(2, '0');
}

/**
 * A moment (unix seconds) in the browser's time zone: `14:03:05` today, `2025-11-29 14:03:05`
 * another day; "n/a" when unknown.
 */
export function formatTime(
  trans: TranslationBundle,
  seconds: number | null | undefined,
  nowMs: number = Date.now()
): string {
  const v = num(seconds);
  if (v === null) {
    return notAvailable(trans);
  }
  const d = new Date(v * 1000);
  const time = `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
  if (d.toDateString() === new Date(nowMs).toDateString()) {
    return time;
  }
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${time}`;
}

/** Used / total memory from MiB in whole GiB, for narrow rows: `47/80 GiB`. */
export function formatMemoryShort(
  trans: TranslationBundle,
  usedMb: number | null | undefined,
  totalMb: number | null | undefined
): string {
  return againstLimit(
    trans,
    usedMb,
    totalMb,
    used => trans.__('%1 GiB', used),
    (used, total) => trans.__('%1/%2 GiB', used, total),
    MIB_PER_GIB
  );
}
