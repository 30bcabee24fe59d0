/**
 * The Experiment panel's runs: a tree of rows (child runs under their parent), each row kept by
 * run id between polls and updated in place; rows of runs no longer shown are dropped.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { h, setChildren, setHidden } from '../common/dom';
import { RunRow } from './run-row';
import { IRunNode } from './tree';

/** What a click on a row or its "workload" button does. */
export interface IRunListActions {
  openRun(row: RunRow): void;
  openWorkload(jobId: string): void;
}

export class RunList {
  constructor(trans: TranslationBundle, actions: IRunListActions) {
    this._trans = trans;
    this._actions = actions;
  }

  /** The list's element. */
  readonly node = h('ul', 'jp-air-exp-runs');

  /** The row of a run shown, `null` when not shown. */
  rowOf(runId: string): RunRow | null {
    return this._rows.get(runId) ?? null;
  }

  /** Rows for the tree, reusing each run's row; `ui`: the MLflow UI URL for the links. */
  render(
    tree: readonly IRunNode[],
    ui: string | null,
    now: number,
    highlight: string | null
  ): void {
    const seen = new Set<string>();
    const place = (nodes: readonly IRunNode[], container: HTMLElement) => {
      const items: HTMLElement[] = [];
      for (const node of nodes) {
        const id = node.run.run_id;
        if (seen.has(id)) {
          continue;
        }
        seen.add(id);
        let row = this._rows.get(id);
        if (!row) {
          row = new RunRow(
            this._trans,
            id,
            r => this._actions.openRun(r),
            jobId => this._actions.openWorkload(jobId)
          );
          this._rows.set(id, row);
        }
        row.update(node.run, ui, now);
        row.setHighlighted(id === highlight);
        place(node.children, row.children);
        setHidden(row.children, node.children.length === 0);
        items.push(row.node);
      }
      setChildren(container, items);
    };
    place(tree, this.node);
    for (const id of Array.from(this._rows.keys())) {
      if (!seen.has(id)) {
        this._rows.delete(id);
      }
    }
  }

  /** The durations of the RUNNING runs shown. */
  tick(now: number): void {
    for (const row of this._rows.values()) {
      if (row.run?.status === 'RUNNING') {
        row.tick(now);
      }
    }
  }

  private readonly _trans: TranslationBundle;
  private readonly _actions: IRunListActions;
  private readonly _rows = new Map<string, RunRow>();
}
