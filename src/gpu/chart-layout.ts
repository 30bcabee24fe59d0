/**
 * The fixed layout of the GPU panel's charts: their height in a sidebar, each metric's y range
 * (utilisation 0–100 %, memory 0 to the largest GPU's memory, temperature fitted) and how its
 * values read.
 */
import { GpuMetric } from './series';
import { IGpuDevice, ISample } from './types';

/** Every chart's height in CSS pixels. */
export const CHART_HEIGHT = 150;

/** The memory chart's y maximum: the largest GPU's memory in GiB (null: fit the data). */
export function memoryAxisMax(
  devices: readonly IGpuDevice[],
  samples: readonly ISample[]
): number | null {
  let max = 0;
  for (const device of devices) {
    max = Math.max(max, device.mem_total_mb ?? 0);
  }
  if (max <= 0 && samples.length) {
    for (const gpu of samples[samples.length - 1].gpus ?? []) {
      max = Math.max(max, gpu.mem_total_mb ?? 0);
    }
  }
  return max > 0 ? max / 1024 : null;
}

/** A metric's y range: fixed where the scale is known, so the axis does not jump. */
export function yRange(
  metric: GpuMetric,
  devices: readonly IGpuDevice[],
  samples: readonly ISample[]
): [number, number] | null {
  if (metric === 'util') {
    return [0, 100];
  }
  if (metric === 'mem') {
    const max = memoryAxisMax(devices, samples);
    return max === null ? null : [0, max];
  }
  return null;
}

/** How many decimals a metric's values are shown with. */
export function digitsOf(metric: GpuMetric): number {
  return metric === 'mem' ? 1 : 0;
}
