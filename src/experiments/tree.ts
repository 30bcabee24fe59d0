/**
 * The Experiment panel's runs as a tree: child runs (MLflow's nested runs) under their parents.
 */
import { IRun } from '../mlflow/types';

/** A run with its child runs (nested by `parent_run_id`). */
export interface IRunNode {
  run: IRun;
  children: IRunNode[];
}

/**
 * Nest runs under their parents (by `parent_run_id`), keeping the given order at every level.
 * A run whose parent is not in the list (filtered out, beyond the limit) is a top-level run;
 * runs in a parent cycle (which MLflow does not make, but data may) are top-level runs.
 */
export function nestRuns(runs: readonly IRun[]): IRunNode[] {
  const nodes = new Map<string, IRunNode>();
  for (const run of runs) {
    if (run && typeof run.run_id === 'string' && !nodes.has(run.run_id)) {
      nodes.set(run.run_id, { run, children: [] });
    }
  }
  const parentOf = (node: IRunNode): IRunNode | null => {
    const id = node.run.parent_run_id;
    return id ? (nodes.get(id) ?? null) : null;
  };
  /** Whether following parents up from `start` reaches `target`. */
  const reaches = (start: IRunNode, target: IRunNode): boolean => {
    const seen = new Set<IRunNode>();
    for (let p: IRunNode | null = start; p && !seen.has(p); p = parentOf(p)) {
      if (p === target) {
        return true;
      }
      seen.add(p);
    }
    return false;
  };
  const roots: IRunNode[] = [];
  for (const node of nodes.values()) {
    const parent = parentOf(node);
    if (parent && !reaches(parent, node)) {
      parent.children.push(node);
    } else {
      roots.push(node);
    }
  }
  return roots;
}
