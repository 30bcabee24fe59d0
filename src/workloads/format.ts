/**
 * Text of job runs: names, compute, times, durations, a queued job run's place in line and why an
 * attempt ended (statuses: common/status.ts).
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { NONE, num } from '../common/text';
import {
  formatFullTime,
  formatRunDuration,
  formatStartTime
} from '../mlflow/format';
import { IAttempt, ICompute, IJob, IJobQueue } from './types';

/** What a job asks for: `CPU`, `2 x GPU`, `2 nodes x 1 x H100` (as `air list runs` says it). */
export function computeText(
  trans: TranslationBundle,
  compute: ICompute | null | undefined
): string {
  const c: Partial<ICompute> =
    compute && typeof compute === 'object' ? compute : {};
  const kind =
    typeof c.accelerator_type === 'string' && c.accelerator_type
      ? c.accelerator_type
      : trans.__('GPU');
  const nodes = num(c.num_nodes) ?? 1;
  const each =
    kind.toUpperCase() === 'CPU'
      ? trans.__('CPU')
      : trans.__('%1 x %2', num(c.num_accelerators) ?? 1, kind);
  return nodes === 1 ? each : trans.__('%1 nodes x %2', nodes, each);
}

/** The number of nodes of a job (at least 1). */
export function nodeCount(job: IJob | null | undefined): number {
  const nodes = num(job?.compute?.num_nodes);
  return nodes !== null && nodes >= 1 ? Math.floor(nodes) : 1;
}

/** A job run's name: its MLflow run name, else its experiment, else its id. */
export function jobName(job: IJob): string {
  return job.run_name || job.experiment_name || job.id;
}

/** The command as one line (a list is joined with spaces). */
export function commandText(command: unknown): string {
  if (Array.isArray(command)) {
    return command.map(part => String(part)).join(' ');
  }
  return typeof command === 'string' ? command : '';
}

/**
 * How long a job run or attempt ran (ms): end − start when it ended, now − start while it runs,
 * `null` before it started.
 */
export function elapsedMs(
  item: { started_at: unknown; ended_at: unknown; status?: unknown },
  now: number
): number | null {
  const start = num(item.started_at);
  if (start === null) {
    return null;
  }
  const end = num(item.ended_at);
  if (end !== null) {
    return Math.max(0, (end - start) * 1000);
  }
  return Math.max(0, now - start * 1000);
}

/** A duration from `elapsedMs`, `—` when unknown. */
export function formatElapsed(
  trans: TranslationBundle,
  item: { started_at: unknown; ended_at: unknown },
  now: number
): string {
  const ms = elapsedMs(item, now);
  return ms === null ? NONE : formatRunDuration(trans, ms);
}

/** A time in unix seconds, compact (`14:03`, `11-29 14:03`); `—` when unknown. */
export function formatTime(seconds: unknown, now: number): string {
  const s = num(seconds);
  return formatStartTime(s === null ? null : s * 1000, now);
}

/** A time in unix seconds, in full for tooltips; `''` when unknown. */
export function formatTimeFull(seconds: unknown): string {
  const s = num(seconds);
  return formatFullTime(s === null ? null : s * 1000);
}

/** `1 attempt`, `3 attempts`. */
export function attemptsText(
  trans: TranslationBundle,
  count: number,
  active = false
): string {
  if (count === 0 && active) {
    // between RUNNING and the attempt's MLflow run
    return trans.__('first attempt starting');
  }
  return trans._n('%1 attempt', '%1 attempts', count);
}

const ORDINALS = new Intl.PluralRules('en', { type: 'ordinal' });

/** An ordinal: `1st`, `2nd`, `3rd`, `11th`, `22nd`. */
export function ordinal(trans: TranslationBundle, n: number): string {
  switch (ORDINALS.select(n)) {
    case 'one':
      return trans.__('%1st', n);
    case 'two':
      return trans.__('%1nd', n);
    case 'few':
      return trans.__('%1rd', n);
    default:
      return trans.__('%1th', n);
  }
}

/** A queued job run's place (1: next to start) and the queue's length, when the server said. */
function queuePlace(
  queue: IJobQueue | null | undefined
): { position: number; total: number | null } | null {
  if (!queue || typeof queue !== 'object') {
    return null;
  }
  const position = num(queue.position);
  if (position === null || position < 1) {
    return null;
  }
  const total = num(queue.total);
  return {
    position: Math.floor(position),
    total: total !== null && total >= position ? Math.floor(total) : null
  };
}

/** Why a queued job run waits, as the server says it; `''` when it did not. */
export function queueReason(queue: IJobQueue | null | undefined): string {
  return queue && typeof queue === 'object' && typeof queue.reason === 'string'
    ? queue.reason
    : '';
}

/** A queued job run's place, for the list: `Queued · 2nd of 3`; `Queued` when not known. */
export function queueShortText(
  trans: TranslationBundle,
  queue: IJobQueue | null | undefined
): string {
  const place = queuePlace(queue);
  if (place === null) {
    return trans.__('Queued');
  }
  const where = ordinal(trans, place.position);
  return place.total === null
    ? trans.__('Queued · %1', where)
    : trans.__('Queued · %1 of %2', where, place.total);
}

/**
 * A queued job run's place and why it waits, for its page: `2nd in line of 3 — Waiting for 2 GPU
 * free`; `''` when the server said neither.
 */
export function queueText(
  trans: TranslationBundle,
  queue: IJobQueue | null | undefined
): string {
  const place = queuePlace(queue);
  const where =
    place === null
      ? ''
      : place.total === null
        ? trans.__('%1 in line', ordinal(trans, place.position))
        : trans.__(
            '%1 in line of %2',
            ordinal(trans, place.position),
            place.total
          );
  const reason = queueReason(queue);
  return where && reason ? trans.__('%1 — %2', where, reason) : where || reason;
}

/** Why an attempt ended: its reason, else its exit code, signal or timeout; `''` when none. */
export function attemptReason(
  trans: TranslationBundle,
  attempt: IAttempt
): string {
  if (typeof attempt.reason === 'string' && attempt.reason) {
    return attempt.reason;
  }
  if (attempt.timed_out) {
    return trans.__('timed out');
  }
  if (attempt.signal !== null && attempt.signal !== undefined) {
    return trans.__('killed by %1', String(attempt.signal));
  }
  const code = num(attempt.exit_code);
  return code === null ? '' : trans.__('exited with code %1', code);
}

/** Bytes as people read them: `512 B`, `2.0 KiB`, `1.5 GiB`. */
export function sizeText(bytes: number): string {
  const units: [string, number][] = [
    ['GiB', 2 ** 30],
    ['MiB', 2 ** 20],
    ['KiB', 2 ** 10]
  ];
  for (const [unit, size] of units) {
    if (bytes >= size) {
      return `${(bytes / size).toFixed(1)} ${unit}`;
    }
  }
  return `${bytes} B`;
}

/**
 * What an attempt's checkpoint was (docs/checkpoints.md): `resumed from attempt 1 (1 file,
 * 2.0 KiB) · saved 2 files, 4.0 KiB · 1 restart in place`; `''` when it had none.
 */
export function checkpointText(
  trans: TranslationBundle,
  attempt: IAttempt
): string {
  const record = attempt.checkpoint;
  if (!record || typeof record !== 'object') {
    return '';
  }
  const parts: string[] = [];
  const restored = record.restored;
  if (restored && typeof restored === 'object') {
    const files = trans._n('%1 file', '%1 files', num(restored.files) ?? 0);
    parts.push(
      trans.__(
        'resumed from attempt %1 (%2, %3)',
        num(restored.attempt) ?? '?',
        files,
        sizeText(num(restored.bytes) ?? 0)
      )
    );
  }
  const saved = record.saved;
  const savedFiles =
    saved && typeof saved === 'object' ? num(saved.files) : null;
  if (saved && savedFiles) {
    parts.push(
      trans.__(
        'saved %1, %2',
        trans._n('%1 file', '%1 files', savedFiles),
        sizeText(num(saved.bytes) ?? 0)
      )
    );
  }
  const restarts = num(record.restarts);
  if (restarts) {
    parts.push(
      trans._n('%1 restart in place', '%1 restarts in place', restarts)
    );
  }
  return parts.join(' · ');
}
