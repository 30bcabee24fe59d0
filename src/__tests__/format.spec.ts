import {
  formatAge,
  formatDuration,
  formatMemory,
  formatPercent,
  formatPower,
  formatTemperature
} from '../gpu/format';
import { trans } from './helpers';

describe('format', () => {
  it('shows unknown values as n/a, never 0', () => {
    expect(formatPercent(trans, null)).toBe('n/a');
    expect(formatMemory(trans, null, 81559)).toBe('n/a');
    expect(formatTemperature(trans, null)).toBe('n/a');
    expect(formatPower(trans, null, 700)).toBe('n/a');
    expect(formatPercent(trans, 0)).toBe('0%');
  });

  it('formats memory, power and temperature', () => {
    expect(formatMemory(trans, 40000, 81559)).toBe('39.1 / 79.6 GiB');
    expect(formatMemory(trans, 40000, null)).toBe('39.1 GiB');
    expect(formatPower(trans, 512.3, 700)).toBe('512 / 700 W');
    expect(formatPower(trans, 512.3, null)).toBe('512 W');
    expect(formatTemperature(trans, 61)).toBe('61 °C');
  });

  it('says durations and ages in words', () => {
    expect(formatDuration(trans, 300)).toBe('5 minutes');
    expect(formatDuration(trans, 60)).toBe('1 minute');
    expect(formatDuration(trans, 3600)).toBe('1 hour');
    expect(formatDuration(trans, 90)).toBe('90 seconds');
    expect(formatAge(trans, 3.7)).toBe('updated 3 s ago');
    expect(formatAge(trans, 600)).toBe('updated 10 min ago');
    expect(formatAge(trans, null)).toBe('no data yet');
  });
});
