import {
  formatAge,
  formatDuration,
  formatMemory,
  formatPercent,
  formatPower,
  formatTemperature
} from '../gpu/format';

describe('format', () => {
  it('shows unknown values as n/a, never 0', () => {
    expect(formatPercent(null)).toBe('n/a');
    expect(formatMemory(null, 81559)).toBe('n/a');
    expect(formatTemperature(null)).toBe('n/a');
    expect(formatPower(null, 700)).toBe('n/a');
    expect(formatPercent(0)).toBe('0%');
  });

  it('formats memory, power and temperature', () => {
    expect(formatMemory(40000, 81559)).toBe('39.1 / 79.6 GiB');
    expect(formatMemory(40000, null)).toBe('39.1 GiB');
    expect(formatPower(512.3, 700)).toBe('512 / 700 W');
    expect(formatPower(512.3, null)).toBe('512 W');
    expect(formatTemperature(61)).toBe('61 °C');
  });

  it('says durations and ages in words', () => {
    expect(formatDuration(300)).toBe('5 minutes');
    expect(formatDuration(60)).toBe('1 minute');
    expect(formatDuration(3600)).toBe('1 hour');
    expect(formatDuration(90)).toBe('90 seconds');
    expect(formatAge(3.7)).toBe('updated 3 s ago');
    expect(formatAge(600)).toBe('updated 10 min ago');
    expect(formatAge(null)).toBe('no data yet');
  });
});
