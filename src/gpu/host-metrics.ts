/**
 * The GPU panel's "Host" section: CPU and memory use of the node the GPUs are in, from the
 * newest sample (a GPU job starved of CPU or host memory shows here first).
 */
import { NA, formatMemory, formatPercent } from './format';
import { h, setText } from './dom';
import { ISample } from './types';

/** The "Host" section. */
export class HostMetrics {
  constructor() {
    this.node = h('div', 'jp-air-gpu-host');
    const title = h('h3', 'jp-air-gpu-section-title', 'Host');
    const cpu = h('div', 'jp-air-gpu-metric');
    this._cpu = h('span', 'jp-air-gpu-host-cpu jp-air-gpu-value', NA);
    cpu.append(h('span', 'jp-air-gpu-label', 'CPU'), this._cpu);
    const mem = h('div', 'jp-air-gpu-metric');
    this._mem = h('span', 'jp-air-gpu-host-mem jp-air-gpu-value', NA);
    mem.append(h('span', 'jp-air-gpu-label', 'Memory'), this._mem);
    const grid = h('div', 'jp-air-gpu-host-metrics');
    grid.append(cpu, mem);
    this.node.append(title, grid);
  }

  /** The section's element. */
  readonly node: HTMLElement;

  render(latest: ISample | null): void {
    const host = latest?.host;
    setText(this._cpu, formatPercent(host?.cpu_pct, 1));
    setText(
      this._mem,
      formatMemory(host?.mem_used_mb ?? null, host?.mem_total_mb ?? null)
    );
  }

  private readonly _cpu: HTMLElement;
  private readonly _mem: HTMLElement;
}
