/**
 * The GPU panel's cluster overview: every node, sorted by name, with its GPUs as compact rows
 * (utilisation, memory, temperature, power, health flags), a filter box, stale and lost nodes
 * marked as such with the time of their last sample, and each node a button that opens the
 * node's own view.
 *
 * One table for all nodes (its columns line up), one `<tbody>` per node kept by name and one row
 * per GPU kept by index between updates: a poll writes only the text that changed.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import {
  h,
  placeInOrder,
  setAttr,
  setHidden,
  setMeter,
  setText,
  tableHead
} from '../common/dom';
import { Wordings, wordingOf } from '../common/text';
import {
  formatMemory,
  formatMemoryShort,
  formatPercent,
  formatPower,
  formatTemperature,
  formatTime
} from './format';
import { flagTexts, setLines } from './health';
import { gpuColor } from './theme';
import { IGpuSummary, INodeSummary, NodeState } from './types';

/** The DOM of one GPU's row (and the row of its flags under it). */
interface IGpuRowView {
  row: HTMLTableRowElement;
  label: HTMLElement;
  util: HTMLElement;
  utilFill: HTMLElement;
  mem: HTMLElement;
  temp: HTMLElement;
  power: HTMLElement;
  flagsRow: HTMLTableRowElement;
  flags: HTMLElement;
}

/** The DOM of one node's group of rows. */
interface INodeView {
  body: HTMLTableSectionElement;
  headRow: HTMLTableRowElement;
  open: HTMLButtonElement;
  hostBadge: HTMLElement;
  state: HTMLElement;
  seen: HTMLElement;
  host: HTMLElement;
  reasonRow: HTMLTableRowElement;
  reason: HTMLElement;
  gpus: Map<number, IGpuRowView>;
  /** Lower-case text the filter matches against. */
  haystack: string;
  /** The summary shown (an unchanged one, as a delta leaves it, costs nothing). */
  shown: INodeSummary | null;
  /** How many of its GPUs are flagged. */
  flagged: number;
}

const COLUMNS = 5;

/** The cluster overview. */
export class NodesOverview {
  /**
   * @param onOpen opens a node's view (the node's name).
   */
  constructor(trans: TranslationBundle, onOpen: (node: string) => void) {
    this._trans = trans;
    this._onOpen = onOpen;
    this.node = h('div', 'jp-air-gpu-overview');
    this._filter = h('input', 'jp-air-gpu-filter jp-mod-styled');
    this._filter.type = 'search';
    this._filter.placeholder = trans.__('Filter nodes');
    this._filter.setAttribute(
      'aria-label',
      trans.__('Filter nodes by name, GPU, state or health flag')
    );
    this._filter.addEventListener('input', () => this._applyFilter());
    this._summary = h('div', 'jp-air-gpu-ov-summary');
    this._summary.setAttribute('aria-live', 'polite');

    this._table = h('table', 'jp-air-gpu-overview-table');
    this._table.append(
      tableHead([
        trans.__('GPU'),
        trans.__('Util.'),
        trans.__('Memory'),
        trans.__('Temp.'),
        trans.__('Power')
      ])
    );
    this._empty = h('div', 'jp-air-gpu-ov-empty');
    this._empty.hidden = true;
    this.node.append(this._filter, this._summary, this._table, this._empty);
  }

  /** The overview's element. */
  readonly node: HTMLElement;

  /** The filter text (lower case, trimmed). */
  get filter(): string {
    return this._filter.value.trim().toLowerCase();
  }

  /** Show these nodes (in this order: the server sorts them by name). */
  render(nodes: readonly INodeSummary[]): void {
    const trans = this._trans;
    const seen = new Set<string>();
    const bodies: HTMLElement[] = [];
    let gpus = 0;
    let flagged = 0;
    let silent = 0;
    for (const node of nodes) {
      seen.add(node.node);
      let view = this._views.get(node.node);
      if (!view) {
        view = this._createNode(node.node);
        this._views.set(node.node, view);
      }
      if (view.shown !== node) {
        view.flagged = this._updateNode(view, node);
        view.shown = node;
      }
      gpus += node.gpus?.length ?? 0;
      flagged += view.flagged;
      if (node.state !== 'live') {
        silent++;
      }
      bodies.push(view.body);
    }
    for (const [name, view] of this._views) {
      if (!seen.has(name)) {
        view.body.remove();
        this._views.delete(name);
      }
    }
    // after the <thead>
    placeInOrder(this._table, [this._table.tHead!, ...bodies]);

    const parts = [
      trans._n('%1 node', '%1 nodes', nodes.length),
      trans._n('%1 GPU', '%1 GPUs', gpus)
    ];
    if (flagged) {
      parts.push(trans._n('%1 GPU flagged', '%1 GPUs flagged', flagged));
    }
    if (silent) {
      parts.push(trans._n('%1 not reporting', '%1 not reporting', silent));
    }
    setText(this._summary, parts.join(' · '));
    this._applyFilter();
  }

  /** Hide the nodes the filter does not match, and say when none is left. */
  private _applyFilter(): void {
    const filter = this.filter;
    let shown = 0;
    for (const view of this._views.values()) {
      const match = !filter || view.haystack.includes(filter);
      setHidden(view.body, !match);
      if (match) {
        shown++;
      }
    }
    const none = this._views.size > 0 && shown === 0;
    setHidden(this._empty, !none);
    setText(
      this._empty,
      none
        ? this._trans.__('No node matches “%1”.', this._filter.value.trim())
        : ''
    );
  }

  private _createNode(name: string): INodeView {
    const trans = this._trans;
    const body = h('tbody', 'jp-air-gpu-ov-node');
    body.dataset.node = name;
    const headRow = h('tr', 'jp-air-gpu-ov-node-row');
    const cell = h('th', 'jp-air-gpu-ov-node-cell');
    cell.scope = 'rowgroup';
    cell.colSpan = COLUMNS;
    const open = h('button', 'jp-air-gpu-ov-open', name);
    open.type = 'button';
    open.title = trans.__('Show node %1: charts and processes', name);
    open.addEventListener('click', () => this._onOpen(name));
    const hostBadge = h(
      'span',
      'jp-air-gpu-ov-jupyter jp-air-badge',
      trans.__('Jupyter host')
    );
    hostBadge.title = trans.__('The node this Jupyter server runs on');
    hostBadge.hidden = true;
    const state = h('span', 'jp-air-gpu-ov-state jp-air-badge');
    state.hidden = true;
    const seen = h('span', 'jp-air-gpu-ov-seen');
    seen.hidden = true;
    const host = h('span', 'jp-air-gpu-ov-hostmetrics');
    cell.append(open, hostBadge, state, seen, host);
    headRow.append(cell);

    const reasonRow = h('tr', 'jp-air-gpu-ov-reason-row');
    const reason = h('td', 'jp-air-gpu-ov-reason');
    reason.colSpan = COLUMNS;
    reasonRow.append(reason);
    reasonRow.hidden = true;
    body.append(headRow, reasonRow);
    // a click anywhere on the node's rows opens it, as its name does
    body.addEventListener('click', event => {
      if (!(event.target as Element).closest('button')) {
        this._onOpen(name);
      }
    });
    return {
      body,
      headRow,
      open,
      hostBadge,
      state,
      seen,
      host,
      reasonRow,
      reason,
      gpus: new Map(),
      haystack: name.toLowerCase(),
      shown: null,
      flagged: 0
    };
  }

  /** Write a node's values; returns how many of its GPUs are flagged. */
  private _updateNode(view: INodeView, node: INodeSummary): number {
    const trans = this._trans;
    const state: NodeState = node.state ?? 'live';
    setAttr(view.body, 'data-state', state);
    setHidden(view.hostBadge, node.source !== 'server');
    setHidden(view.state, state === 'live');
    setText(view.state, stateText(trans, state));
    setAttr(view.state, 'title', stateTitle(trans, state));
    // the time of the node's last sample (its own clock), else of its last report
    const last = node.last_sample_t ?? node.last_seen ?? null;
    setHidden(view.seen, state === 'live');
    setText(
      view.seen,
      last === null
        ? trans.__('no sample yet')
        : trans.__('last sample %1', formatTime(trans, last))
    );
    setText(
      view.host,
      node.host
        ? trans.__(
            'CPU %1 · RAM %2',
            formatPercent(trans, node.host.cpu_pct),
            formatMemory(trans, node.host.mem_used_mb, node.host.mem_total_mb)
          )
        : ''
    );

    const noGpu = node.backend !== 'nvml' && node.backend !== 'simulated';
    const reason = noGpu
      ? node.reason || trans.__('No GPU data from this node.')
      : node.error
        ? trans.__('Sampling error: %1', node.error)
        : '';
    setHidden(view.reasonRow, !reason);
    setText(view.reason, reason);

    const words: string[] = [node.node, stateText(trans, state)];
    const keep = new Set<number>();
    const rows: HTMLElement[] = [view.headRow, view.reasonRow];
    let flagged = 0;
    for (const gpu of noGpu ? [] : (node.gpus ?? [])) {
      keep.add(gpu.index);
      let row = view.gpus.get(gpu.index);
      if (!row) {
        row = this._createGpu(gpu.index);
        view.gpus.set(gpu.index, row);
      }
      const reasons = this._updateGpu(row, gpu);
      if (reasons.length) {
        flagged++;
      }
      words.push(gpu.name ?? '', ...reasons);
      rows.push(row.row, row.flagsRow);
    }
    for (const [index, row] of view.gpus) {
      if (!keep.has(index)) {
        row.row.remove();
        row.flagsRow.remove();
        view.gpus.delete(index);
      }
    }
    placeInOrder(view.body, rows);
    view.body.classList.toggle('jp-mod-flagged', flagged > 0);
    view.haystack = words.join('\n').toLowerCase();
    return flagged;
  }

  private _createGpu(index: number): IGpuRowView {
    const trans = this._trans;
    const row = h('tr', 'jp-air-gpu-ov-gpu');
    row.dataset.gpuIndex = String(index);
    const first = h('td', 'jp-air-gpu-ov-index');
    const swatch = h('span', 'jp-air-gpu-swatch');
    swatch.style.backgroundColor = gpuColor(index);
    const label = h('span', 'jp-air-gpu-ov-label', String(index));
    first.append(swatch, label);
    const utilCell = h('td', 'jp-air-gpu-ov-util-cell');
    const util = h('span', 'jp-air-gpu-ov-util');
    const bar = h('span', 'jp-air-gpu-meter');
    const utilFill = h('span', 'jp-air-gpu-meter-fill');
    bar.append(utilFill);
    utilCell.append(util, bar);
    const mem = h('td', 'jp-air-gpu-ov-mem');
    const temp = h('td', 'jp-air-gpu-ov-temp');
    const power = h('td', 'jp-air-gpu-ov-power');
    row.append(first, utilCell, mem, temp, power);

    const flagsRow = h('tr', 'jp-air-gpu-ov-flags-row');
    const flagsCell = h('td');
    flagsCell.colSpan = COLUMNS;
    const flags = h('ul', 'jp-air-gpu-flags');
    flags.setAttribute('aria-label', trans.__('Health flags of GPU %1', index));
    flagsCell.append(flags);
    flagsRow.append(flagsCell);
    flagsRow.hidden = true;
    return { row, label, util, utilFill, mem, temp, power, flagsRow, flags };
  }

  /** Write a GPU's values; returns its flags' reasons in words. */
  private _updateGpu(view: IGpuRowView, gpu: IGpuSummary): string[] {
    const trans = this._trans;
    const lost = !!gpu.lost;
    view.row.classList.toggle('jp-mod-lost', lost);
    setText(
      view.label,
      lost ? trans.__('%1 lost', gpu.index) : String(gpu.index)
    );
    setAttr(
      view.row,
      'title',
      [gpu.name, gpu.uuid].filter(part => !!part).join('\n')
    );
    setText(view.util, formatPercent(trans, gpu.util_pct));
    setMeter(view.utilFill, lost ? null : gpu.util_pct);
    setText(
      view.mem,
      formatMemoryShort(trans, gpu.mem_used_mb, gpu.mem_total_mb)
    );
    setAttr(
      view.mem,
      'title',
      formatMemory(trans, gpu.mem_used_mb, gpu.mem_total_mb)
    );
    setText(view.temp, formatTemperature(trans, gpu.temp_c));
    setText(view.power, formatPower(trans, gpu.power_w, null));
    setAttr(
      view.power,
      'title',
      formatPower(trans, gpu.power_w, gpu.power_limit_w)
    );
    const reasons = lost ? [] : flagTexts(trans, gpu.health);
    view.row.classList.toggle('jp-mod-flagged', reasons.length > 0);
    setHidden(view.flagsRow, reasons.length === 0);
    setLines(view.flags, reasons, 'jp-air-gpu-flag');
    return reasons;
  }

  private readonly _trans: TranslationBundle;
  private readonly _onOpen: (node: string) => void;
  private readonly _filter: HTMLInputElement;
  private readonly _summary: HTMLElement;
  private readonly _table: HTMLTableElement;
  private readonly _empty: HTMLElement;
  private readonly _views = new Map<string, INodeView>();
}

/** A node's state in a word, and what it means (neither when live). */
const STATE_WORDS: Wordings = {
  stale: trans => trans.__('stale'),
  lost: trans => trans.__('lost')
};
const STATE_TITLES: Wordings = {
  stale: trans => trans.__('The node has not reported for 3 of its intervals'),
  lost: trans =>
    trans.__('The node has not reported for a long time: its agent may be down')
};

/** A node's state in a word ("" when live). */
export function stateText(trans: TranslationBundle, state: NodeState): string {
  return wordingOf(trans, STATE_WORDS, state) ?? '';
}

/** What a node's state means. */
export function stateTitle(trans: TranslationBundle, state: NodeState): string {
  return wordingOf(trans, STATE_TITLES, state) ?? '';
}
