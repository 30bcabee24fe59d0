/**
 * GPU health in words: the flags that say a GPU, not the code, is the problem (an uncorrected
 * ECC error, an XID error, thermal or hardware slowdown, a failed row remap), the throttle
 * reasons, and the health details of one GPU (clocks against their maximums, throttling, fan,
 * ECC counts, retired pages, remapped rows, XIDs) as label/value lines.
 *
 * Pure text from the API's `GpuHealth` (see docs/api.md): every unknown value (`null`, NVML
 * "Not Supported") reads "n/a", never 0. The overview rows and the node's GPU cards both use it.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { h, setHidden, setText } from '../common/dom';
import { Wordings, num, wordingOf } from '../common/text';
import {
  formatClock,
  formatCount,
  formatPercent,
  formatTime,
  notAvailable
} from './format';
import { IGpuHealth, IMigDevice, IMigReading } from './types';

/** Throttle (clock-event) reasons in words. */
const THROTTLE_REASONS: Wordings = {
  gpu_idle: trans => trans.__('idle'),
  applications_clocks_setting: trans => trans.__('application clocks setting'),
  sw_power_cap: trans => trans.__('power cap'),
  hw_slowdown: trans => trans.__('hardware slowdown'),
  sync_boost: trans => trans.__('sync boost'),
  sw_thermal_slowdown: trans => trans.__('software thermal slowdown'),
  hw_thermal_slowdown: trans => trans.__('hardware thermal slowdown'),
  hw_power_brake_slowdown: trans => trans.__('hardware power brake'),
  display_clock_setting: trans => trans.__('display clock setting')
};

/** A throttle (clock-event) reason in words (an unknown one as it came). */
export function throttleReasonText(
  trans: TranslationBundle,
  reason: string
): string {
  return wordingOf(trans, THROTTLE_REASONS, reason) ?? reason;
}

/** The last XID error of a GPU, in words (`XID 79 at 14:03:05`), `null` when none is known. */
function lastXid(trans: TranslationBundle, health: IGpuHealth): string | null {
  const errors = Array.isArray(health.xid_errors) ? health.xid_errors : [];
  const last = errors[errors.length - 1];
  if (!last || num(last.xid) === null) {
    return null;
  }
  return trans.__('XID %1 at %2', last.xid, formatTime(trans, last.t));
}

/** Why a flag is raised, in words. */
export function flagText(
  trans: TranslationBundle,
  flag: string,
  health: IGpuHealth
): string {
  switch (flag) {
    case 'ecc_uncorrected':
      return trans.__(
        'Uncorrected ECC errors: %1',
        formatCount(trans, health.ecc_uncorrected)
      );
    case 'xid': {
      const last = lastXid(trans, health);
      const count = formatCount(trans, health.xid_count);
      return last
        ? trans.__('XID errors: %1 (last: %2)', count, last)
        : trans.__('XID errors: %1', count);
    }
    case 'thermal_throttling':
      return trans.__('Thermal slowdown: clocks lowered to cool the GPU');
    case 'hw_slowdown':
      return trans.__('Hardware slowdown: clocks lowered by the GPU');
    case 'row_remap_failure':
      return trans.__('Row remapping failed: the memory cannot be repaired');
    default:
      return flag;
  }
}

/** The flags of a GPU's health (none without health). */
export function healthFlags(health: IGpuHealth | null | undefined): string[] {
  return health && Array.isArray(health.flags) ? health.flags : [];
}

/** Every flag's reason, in words. */
export function flagTexts(
  trans: TranslationBundle,
  health: IGpuHealth | null | undefined
): string[] {
  return health
    ? healthFlags(health).map(flag => flagText(trans, flag, health))
    : [];
}

/** Two counts of one kind (`2 single-bit, 0 double-bit`), "n/a" when both are unknown. */
function pair(
  trans: TranslationBundle,
  a: number | null | undefined,
  b: number | null | undefined,
  text: (a: string, b: string) => string
): string {
  if (num(a) === null && num(b) === null) {
    return notAvailable(trans);
  }
  return text(formatCount(trans, a), formatCount(trans, b));
}

/** A GPU's health details as [label, value] lines; `null` health reads "n/a" throughout. */
export function healthLines(
  trans: TranslationBundle,
  health: IGpuHealth | null | undefined
): [string, string][] {
  const na = notAvailable(trans);
  if (!health) {
    return [[trans.__('Health'), na]];
  }
  const reasons = health.throttle_reasons;
  const throttling =
    reasons === null || !Array.isArray(reasons)
      ? na
      : reasons.length === 0
        ? trans.__('none')
        : reasons.map(reason => throttleReasonText(trans, reason)).join(', ');
  let retired = pair(
    trans,
    health.retired_pages_sbe,
    health.retired_pages_dbe,
    (sbe, dbe) => trans.__('%1 single-bit, %2 double-bit', sbe, dbe)
  );
  if (health.retired_pages_pending === true) {
    retired = trans.__('%1 (retirement pending a reset)', retired);
  }
  let remapped = pair(
    trans,
    health.remapped_rows_correctable,
    health.remapped_rows_uncorrectable,
    (ok, bad) => trans.__('%1 correctable, %2 uncorrectable', ok, bad)
  );
  if (health.row_remap_failure === true) {
    remapped = trans.__('%1 (remapping failed)', remapped);
  } else if (health.row_remap_pending === true) {
    remapped = trans.__('%1 (remap pending a reset)', remapped);
  }
  const xidCount = formatCount(trans, health.xid_count);
  const last = lastXid(trans, health);
  const xid =
    last && num(health.xid_count)
      ? trans.__('%1 (last: %2)', xidCount, last)
      : xidCount;
  return [
    [
      trans.__('SM clock'),
      formatClock(trans, health.sm_clock_mhz, health.sm_clock_max_mhz)
    ],
    [
      trans.__('Memory clock'),
      formatClock(trans, health.mem_clock_mhz, health.mem_clock_max_mhz)
    ],
    [trans.__('Throttling'), throttling],
    [trans.__('Fan'), formatPercent(trans, health.fan_pct)],
    [
      trans.__('ECC errors'),
      pair(trans, health.ecc_corrected, health.ecc_uncorrected, (ok, bad) =>
        trans.__('%1 corrected, %2 uncorrected', ok, bad)
      )
    ],
    [trans.__('Retired pages'), retired],
    [trans.__('Remapped rows'), remapped],
    [trans.__('XID errors'), xid]
  ];
}

/** A GPU's MIG instances as lines: `MIG 0 · 3g.40gb · 1.2 / 39.3 GiB`. */
export function migLines(
  trans: TranslationBundle,
  readings: readonly IMigReading[],
  devices: readonly IMigDevice[],
  formatMemory: (used: number | null, total: number | null) => string
): string[] {
  const byIndex = new Map<number, IMigDevice>();
  for (const device of devices) {
    byIndex.set(device.index, device);
  }
  const indices = new Set<number>([
    ...devices.map(d => d.index),
    ...readings.map(r => r.index)
  ]);
  const readingOf = new Map<number, IMigReading>();
  for (const reading of readings) {
    readingOf.set(reading.index, reading);
  }
  return Array.from(indices)
    .sort((a, b) => a - b)
    .map(index => {
      const device = byIndex.get(index);
      const reading = readingOf.get(index);
      // "NVIDIA H100 80GB HBM3 MIG 3g.40gb" → "3g.40gb": the profile is what tells them apart
      const profile = device?.name?.split(' MIG ').pop() ?? null;
      const memory = formatMemory(
        reading?.mem_used_mb ?? null,
        reading?.mem_total_mb ?? device?.mem_total_mb ?? null
      );
      return profile && profile !== device?.name
        ? trans.__('MIG %1 · %2 · %3', index, profile, memory)
        : trans.__('MIG %1 · %2', index, memory);
    });
}

/** Write text lines into a list element, reusing its items. */
export function setLines(
  list: HTMLElement,
  lines: readonly string[],
  itemClass: string
): void {
  while (list.children.length > lines.length) {
    list.lastElementChild!.remove();
  }
  lines.forEach((line, i) => {
    let item = list.children[i] as HTMLElement | undefined;
    if (!item) {
      item = h('li', itemClass);
      list.append(item);
    }
    setText(item, line);
  });
  setHidden(list, lines.length === 0);
}
