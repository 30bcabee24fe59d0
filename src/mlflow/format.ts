/**
 * Text of runs and of MLflow: durations, start times, metric values, "MLflow is starting"
 * (statuses: common/status.ts).
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { NONE } from '../common/text';
import { IMlflowStatus } from './types';

/** A run's duration, compact: `45 s`, `3 min 12 s`, `2 h 05 min`, `3 d 4 h`. */
export function formatRunDuration(
  trans: TranslationBundle,
  ms: number | null
): string {
  if (ms === null || !Number.isFinite(ms)) {
    return NONE;
  }
  const total = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(total / 86400);
  const hours = Math.floor((total % 86400) / 3600);
  const min = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (d > 0) {
    return trans.__('%1 d %2 h', d, hours);
  }
  if (hours > 0) {
    return trans.__('%1 h %2 min', hours, String(min).padStart(2, '0'));
  }
  if (min > 0) {
    return trans.__('%1 min %2 s', min, s);
  }
  return trans.__('%1 s', s);
}

/**
 * A run's duration now: end − start when ended, now − start while running; `null` when unknown.
 */
export function runDurationMs(
  status: string,
  startTime: number | null,
  endTime: number | null,
  now: number
): number | null {
  if (startTime === null || !Number.isFinite(startTime)) {
    return null;
  }
  if (endTime !== null && Number.isFinite(endTime)) {
    return Math.max(0, endTime - startTime);
  }
  return status === 'RUNNING' ? Math.max(0, now - startTime) : null;
}

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * A start time (ms since the epoch), local time: `14:03` today, `11-29 14:03` this year, else
 * `2024-11-29 14:03`.
 */
export function formatStartTime(ms: number | null, now: number): string {
  if (ms === null || !Number.isFinite(ms)) {
    return NONE;
  }
  const t = new Date(ms);
  const today = new Date(now);
  const time = `${pad(t.getHours())}:${pad(t.getMinutes())}`;
  if (t.toDateString() === today.toDateString()) {
    return time;
  }
  const date = `${pad(t.getMonth() + 1)}-${pad(t.getDate())}`;
  return t.getFullYear() === today.getFullYear()
    ? `${date} ${time}`
    : `${t.getFullYear()}-${date} ${time}`;
}

/** A full local date and time for tooltips. */
export function formatFullTime(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) {
    return '';
  }
  return new Date(ms).toLocaleString();
}

/** A metric value: `0.1235`, `42`, `1.23e-5`, `3.4e+6`. */
export function formatMetric(value: unknown): string {
  if (typeof value !== 'number' || Number.isNaN(value)) {
    return NONE;
  }
  if (!Number.isFinite(value)) {
    return value > 0 ? '∞' : '-∞';
  }
  if (Number.isInteger(value) && Math.abs(value) < 1e9) {
    return String(value);
  }
  const abs = Math.abs(value);
  if (abs !== 0 && (abs < 1e-3 || abs >= 1e6)) {
    return value.toExponential(2).replace(/\.?0+e/, 'e');
  }
  return String(parseFloat(value.toPrecision(4)));
}

/** "MLflow is starting (12 s)…". */
export function startingTitle(
  trans: TranslationBundle,
  status: Pick<IMlflowStatus, 'elapsed_s'> | null | undefined
): string {
  const elapsed = status?.elapsed_s;
  return typeof elapsed === 'number' && Number.isFinite(elapsed)
    ? trans.__('MLflow is starting (%1 s)…', Math.max(0, Math.round(elapsed)))
    : trans.__('MLflow is starting…');
}
