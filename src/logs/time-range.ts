/**
 * The Logs view's time range: "From" and "To" as `datetime-local` inputs (local time, to the
 * second), sent as unix seconds (`since` inclusive, `until` exclusive).
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { h } from '../common/dom';
import { ILogFilters } from './query';

/** `datetime-local` input value → unix seconds (local time), `null` when empty or invalid. */
export function inputToSeconds(value: string): number | null {
  if (!value) {
    return null;
  }
  const ms = new Date(value).getTime();
  return Number.isFinite(ms) ? ms / 1000 : null;
}

/** Unix seconds → `datetime-local` input value (local time, to the second). */
export function secondsToInput(seconds: number | null): string {
  if (seconds === null) {
    return '';
  }
  const d = new Date(seconds * 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export class TimeRange {
  /** `changed`: the user set one end of the range (`null`: cleared). */
  constructor(
    trans: TranslationBundle,
    changed: (range: Partial<Pick<ILogFilters, 'since' | 'until'>>) => void
  ) {
    this._since = this._input(
      'since',
      trans.__('From'),
      trans.__('Lines written at or after this time'),
      seconds => changed({ since: seconds })
    );
    this._until = this._input(
      'until',
      trans.__('To'),
      trans.__('Lines written before this time'),
      seconds => changed({ until: seconds })
    );
  }

  /** The range's element. */
  readonly node = h('div', 'jp-air-logs-range');

  /** Show the filters' range (not in an input the user is typing in). */
  render(filters: Readonly<ILogFilters>): void {
    for (const [input, seconds] of [
      [this._since, filters.since],
      [this._until, filters.until]
    ] as [HTMLInputElement, number | null][]) {
      if (
        inputToSeconds(input.value) !== seconds &&
        document.activeElement !== input
      ) {
        input.value = secondsToInput(seconds);
      }
    }
  }

  /** A `datetime-local` input with its label. */
  private _input(
    name: 'since' | 'until',
    text: string,
    title: string,
    changed: (seconds: number | null) => void
  ): HTMLInputElement {
    const label = h('label', `jp-air-logs-time-filter jp-air-logs-${name}`);
    label.append(h('span', 'jp-air-logs-time-label', text));
    const input = h('input', `jp-air-logs-${name}-input`);
    input.type = 'datetime-local';
    input.step = '1';
    input.title = title;
    input.addEventListener('change', () =>
      changed(inputToSeconds(input.value))
    );
    label.append(input);
    this.node.append(label);
    return input;
  }

  private readonly _since: HTMLInputElement;
  private readonly _until: HTMLInputElement;
}
