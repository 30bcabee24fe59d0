/**
 * The GPU panel's "Host" section: CPU and memory use of the node the GPUs are in, from the
 * newest sample (a GPU job starved of CPU or host memory shows here first).
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { h, setText } from '../common/dom';
import { formatMemory, formatPercent, notAvailable } from './format';
import { ISample } from './types';

/** The "Host" section. */
export class HostMetrics {
  constructor(trans: TranslationBundle) {
    this._trans = trans;
    this.node = h('div', 'jp-air-gpu-host');
    const title = h('h3', 'jp-air-gpu-section-title', trans.__('Host'));
    const na = notAvailable(trans);
    const cpu = h('div', 'jp-air-gpu-metric');
    this._cpu = h('span', 'jp-air-gpu-host-cpu jp-air-gpu-value', na);
    cpu.append(h('span', 'jp-air-gpu-label', trans.__('CPU')), this._cpu);
    const mem = h('div', 'jp-air-gpu-metric');
    this._mem = h('span', 'jp-air-gpu-host-mem jp-air-gpu-value', na);
    mem.append(h('span', 'jp-air-gpu-label', trans.__('Memory')), this._mem);
    const grid = h('div', 'jp-air-gpu-host-metrics');
    grid.append(cpu, mem);
    this.node.append(title, grid);
  }

  /** The section's element. */
  readonly node: HTMLElement;

  render(latest: ISample | null): void {
    const host = latest?.host;
    const trans = this._trans;
    setText(this._cpu, formatPercent(trans, host?.cpu_pct, 1));
    setText(
      this._mem,
      formatMemory(trans, host?.mem_used_mb, host?.mem_total_mb)
    );
  }

  private readonly _trans: TranslationBundle;
  private readonly _cpu: HTMLElement;
  private readonly _mem: HTMLElement;
}
