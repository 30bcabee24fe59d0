/**
 * The MLflow run a page shows, from the hash route of MLflow's UI:
 * `#/experiments/{exp}/runs/{run}` (optionally followed by a tab, `/model-metrics`, or a query),
 * `#/experiments/{exp}/evaluation-runs/{run}` and `#/runs/{run}` (see shape.ts).
 */

/** The run a page shows. */
export interface IRunRoute {
  /** `null` for `#/runs/{run}` (MLflow redirects it to the experiment's form). */
  experimentId: string | null;
  /** MLflow's run id: 32 hexadecimal digits. */
  runId: string;
}

const EXPERIMENT_RUN =
  /^#?\/experiments\/([^/?#]+)\/(?:runs|evaluation-runs)\/([0-9a-f]{32})(?=$|[/?#])/i;
const DIRECT_RUN = /^#?\/runs\/([0-9a-f]{32})(?=$|[/?#])/i;

/** The run page a hash route (`location.hash`) shows, `null` for any other page. */
export function parseRunRoute(hash: string): IRunRoute | null {
  let route = String(hash ?? '');
  try {
    route = decodeURI(route);
  } catch {
    // keep it as it is: the patterns below only accept plain characters
  }
  const found = EXPERIMENT_RUN.exec(route);
  if (found !== null) {
    return { experimentId: found[1], runId: found[2].toLowerCase() };
  }
  const direct = DIRECT_RUN.exec(route);
  if (direct !== null) {
    return { experimentId: null, runId: direct[1].toLowerCase() };
  }
  return null;
}
