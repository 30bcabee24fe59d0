/**
 * The GPU panel's processes table: who uses the GPUs now (GPU, PID, user, command, GPU memory),
 * for a Jupyter kernel (or a process it started) its notebook as a link that opens it, and for a
 * process of a jupyter-air run (a `.distributed()` rank, a workload node's processes) that
 * MLflow run and rank, linked to the run's page and, for a workload, to its job run's page.
 *
 * Rows are kept by GPU and PID and rebuilt only when that process's data changed.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { button, h, placeViews, setHidden, tableHead } from '../common/dom';
import { NONE } from '../common/text';
import { formatGiB } from './format';
import { IRunLinker, jobLink, runLink } from './run-links';
import { IGpuProcess, IRunOwner, ISample } from './types';

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
   * @param linker builds the run and job links; without it runs are plain text.
   */
  constructor(
    trans: TranslationBundle,
    openPath: ((path: string) => void) | null,
    linker: IRunLinker | null = null
  ) {
    this._trans = trans;
    this._openPath = openPath;
    this._linker = linker;
    this.node = h('div', 'jp-air-gpu-processes');
    const title = h('h3', 'jp-air-gpu-section-title', trans.__('Processes'));
    const table = h('table', 'jp-air-gpu-process-table');
    const thead = tableHead([
      trans.__('GPU'),
      trans.__('PID'),
      trans.__('User'),
      trans.__('Process'),
      trans.__('GPU memory'),
      trans.__('Notebook'),
      trans.__('Run')
    ]);
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
    const ui = this._linker?.mlflowUi() ?? null;
    for (const entry of entries) {
      const key = `${entry.gpu}:${entry.process.pid}`;
      keep.add(key);
      // the MLflow UI's address can arrive later: links are rebuilt when it does
      const signature = JSON.stringify([entry.gpu, entry.process, ui]);
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
    placeViews(this._body, roots, this._rows, keep);
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
    row.append(this._runCell(process.run ?? null));
  }

  /** The run a process works for: run (linked), rank or node, and the job run (linked). */
  private _runCell(run: IRunOwner | null): HTMLTableCellElement {
    const trans = this._trans;
    const cell = h('td', 'jp-air-gpu-process-run');
    if (!run || !run.run_id) {
      cell.textContent = NONE;
      return cell;
    }
    const short = run.run_id.slice(0, 8);
    const title = trans.__('MLflow run %1', run.run_id);
    const linker = this._linker;
    const link = linker
      ? runLink(linker, run, trans.__('run %1', short), title)
      : null;
    if (link) {
      cell.append(link);
    } else {
      const text = h('span', 'jp-air-gpu-run-id', trans.__('run %1', short));
      text.title = title;
      cell.append(text);
    }
    const where: string[] = [];
    if (run.rank !== null && run.rank !== undefined) {
      where.push(trans.__('rank %1', run.rank));
    }
    if (run.node_rank !== null && run.node_rank !== undefined) {
      where.push(trans.__('node %1', run.node_rank));
    }
    if (where.length) {
      cell.append(h('span', 'jp-air-gpu-run-rank', where.join(', ')));
    }
    if (run.job_id) {
      const jobTitle = trans.__('Job run %1 (Workloads)', run.job_id);
      const text = trans.__('job %1', run.job_id);
      const job = linker ? jobLink(linker, run.job_id, text, jobTitle) : null;
      if (job) {
        cell.append(job);
      } else {
        const plain = h('span', 'jp-air-gpu-job-id', text);
        plain.title = jobTitle;
        cell.append(plain);
      }
    }
    return cell;
  }

  private readonly _trans: TranslationBundle;
  private readonly _openPath: ((path: string) => void) | null;
  private readonly _linker: IRunLinker | null;
  private readonly _body: HTMLTableSectionElement;
  private readonly _empty: HTMLElement;
  private _rows = new Map<string, IProcessRowView>();
}
