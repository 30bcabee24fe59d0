/**
 * The GPU panel's processes table: who uses the GPUs now (GPU, PID, user, command, GPU memory)
 * and, for a Jupyter kernel, its notebook as a link that opens it.
 *
 * Rows are kept by GPU and PID and rebuilt only when that process's data changed.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { button, h, placeInOrder, setHidden } from '../common/dom';
import { NONE } from '../common/text';
import { formatGiB } from './format';
import { IGpuProcess, ISample } from './types';

/** The DOM of one process row, kept between updates. */
interface IProcessRowView {
  root: HTMLTableRowElement;
  signature: string;
}

/** One process with the GPU it runs on. */
interface IProcessEntry {
  gpu: number;
  process: IGpuProcess;
}

/** The "Processes" section. */
export class ProcessesTable {
  /**
   * @param openPath opens a notebook path; without it paths are plain text.
   */
  constructor(
    trans: TranslationBundle,
    openPath: ((path: string) => void) | null
  ) {
    this._trans = trans;
    this._openPath = openPath;
    this.node = h('div', 'jp-air-gpu-processes');
    const title = h('h3', 'jp-air-gpu-section-title', trans.__('Processes'));
    const table = h('table', 'jp-air-gpu-process-table');
    const thead = h('thead');
    const headRow = h('tr');
    for (const label of [
      trans.__('GPU'),
      trans.__('PID'),
      trans.__('User'),
      trans.__('Process'),
      trans.__('GPU memory'),
      trans.__('Notebook')
    ]) {
      const th = h('th', undefined, label);
      th.scope = 'col';
      headRow.append(th);
    }
    thead.append(headRow);
    this._body = h('tbody');
    table.append(thead, this._body);
    this._empty = h(
      'div',
      'jp-air-gpu-processes-empty',
      trans.__('No processes are using the GPUs.')
    );
    this.node.append(title, table, this._empty);
  }

  /** The section's element. */
  readonly node: HTMLElement;

  /** The processes of the newest sample, by GPU, then largest GPU memory first, then PID. */
  render(latest: ISample | null): void {
    const entries: IProcessEntry[] = [];
    for (const gpu of latest?.gpus ?? []) {
      if (gpu.lost) {
        continue;
      }
      for (const process of gpu.processes ?? []) {
        entries.push({ gpu: gpu.index, process });
      }
    }
    entries.sort(
      (a, b) =>
        a.gpu - b.gpu ||
        (b.process.gpu_mem_mb ?? -1) - (a.process.gpu_mem_mb ?? -1) ||
        a.process.pid - b.process.pid
    );
    setHidden(this._empty, entries.length > 0);

    const keep = new Set<string>();
    const roots: HTMLElement[] = [];
    for (const entry of entries) {
      const key = `${entry.gpu}:${entry.process.pid}`;
      keep.add(key);
      const signature = JSON.stringify([entry.gpu, entry.process]);
      let row = this._rows.get(key);
      if (!row) {
        row = { root: h('tr', 'jp-air-gpu-process'), signature: '' };
        this._rows.set(key, row);
      }
      if (row.signature !== signature) {
        this._fillRow(row.root, entry);
        row.signature = signature;
      }
      roots.push(row.root);
    }
    placeInOrder(this._body, roots);
    for (const [key, row] of this._rows) {
      if (!keep.has(key)) {
        row.root.remove();
        this._rows.delete(key);
      }
    }
  }

  private _fillRow(row: HTMLTableRowElement, entry: IProcessEntry): void {
    const trans = this._trans;
    const { gpu, process } = entry;
    row.dataset.gpuIndex = String(gpu);
    row.dataset.pid = String(process.pid);
    row.replaceChildren();

    row.append(h('td', 'jp-air-gpu-process-gpu', String(gpu)));
    row.append(h('td', 'jp-air-gpu-process-pid', String(process.pid)));
    row.append(h('td', 'jp-air-gpu-process-user', process.user || NONE));

    const commandText = process.command || process.name || NONE;
    const command = h('td', 'jp-air-gpu-process-command', commandText);
    if (process.command || process.name) {
      command.title = process.command || process.name || '';
    }
    row.append(command);

    row.append(
      h('td', 'jp-air-gpu-process-mem', formatGiB(trans, process.gpu_mem_mb, 2))
    );

    const notebook = h('td', 'jp-air-gpu-process-notebook');
    const kernel = process.kernel;
    const openPath = this._openPath;
    if (kernel?.path) {
      const path = kernel.path;
      // the file name reads in a narrow column; the full path is in the tooltip
      const name = path.split('/').pop() || path;
      if (openPath) {
        notebook.append(
          button(
            'jp-air-gpu-notebook-link',
            name,
            () => openPath(path),
            trans.__('Open %1', path)
          )
        );
      } else {
        notebook.append(h('span', 'jp-air-gpu-notebook-path', name));
        notebook.title = path;
      }
    } else if (kernel?.kernel_name) {
      notebook.append(
        h(
          'span',
          'jp-air-gpu-kernel-name',
          trans.__('%1 kernel', kernel.kernel_name)
        )
      );
      notebook.title = trans.__('Kernel %1', kernel.kernel_id);
    } else {
      notebook.textContent = NONE;
    }
    row.append(notebook);
  }

  private readonly _trans: TranslationBundle;
  private readonly _openPath: ((path: string) => void) | null;
  private readonly _body: HTMLTableSectionElement;
  private readonly _empty: HTMLElement;
  private _rows = new Map<string, IProcessRowView>();
}
