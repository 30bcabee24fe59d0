/**
 * The GPU panel's sample history: merging the deltas the server sends (`since=`) into what the
 * panel holds, and keeping it to the history window. Pure functions, driven by jest directly.
 */
import { ISample } from './types';

/**
 * Merge new samples into a history (both oldest first): de-duplicated by `t` (the incoming
 * sample wins) and sorted. The common case, all new samples after the existing ones, is a concat.
 */
export function mergeSamples(
  existing: readonly ISample[],
  incoming: readonly ISample[]
): ISample[] {
  const fresh = incoming.filter(s => s && Number.isFinite(s.t));
  if (fresh.length === 0) {
    return existing.slice();
  }
  const last = existing.length ? existing[existing.length - 1].t : -Infinity;
  let ordered = true;
  let previous = last;
  for (const sample of fresh) {
    if (sample.t <= previous) {
      ordered = false;
      break;
    }
    previous = sample.t;
  }
  if (ordered) {
    return existing.concat(fresh);
  }
  const byTime = new Map<number, ISample>();
  for (const sample of existing) {
    byTime.set(sample.t, sample);
  }
  for (const sample of fresh) {
    byTime.set(sample.t, sample);
  }
  return Array.from(byTime.values()).sort((a, b) => a.t - b.t);
}

/** Drop the samples older than `windowS` before the newest one. */
export function trimSamples(samples: ISample[], windowS: number): ISample[] {
  if (samples.length === 0 || !(windowS > 0)) {
    return samples;
  }
  const horizon = samples[samples.length - 1].t - windowS;
  let first = 0;
  while (first < samples.length && samples[first].t < horizon) {
    first++;
  }
  return first === 0 ? samples : samples.slice(first);
}

/** Whether two histories hold the same sample objects. */
export function sameSamples(
  a: readonly ISample[],
  b: readonly ISample[]
): boolean {
  if (a.length !== b.length) {
    return false;
  }
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) {
      return false;
    }
  }
  return true;
}
