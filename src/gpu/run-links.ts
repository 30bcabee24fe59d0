/**
 * Links from a GPU process to what it works for: its jupyter-air MLflow run (the MLflow UI's run
 * page, `#/experiments/{experiment}/runs/{run}`) and, for a workload, its job run's page in the
 * Workloads panel (`<base>lab?air-workload=<id>`).
 *
 * Each is a real `<a href>` (middle-click, "open in new tab" work); a plain click opens it inside
 * JupyterLab instead, through the commands the MLflow tab and the Workloads panel provide.
 */
import { CommandIDs, ICommandRunner, runCommand } from '../commands';
import { isNewTabClick, newTabLink } from '../common/dom';
import { safeFragment, uiLink } from '../mlflow/links';
import { jobId, workloadUrl } from '../workloads/url';
import { IRunOwner } from './types';

/** Where the links of the processes table point, and how a plain click opens them. */
export interface IRunLinker {
  /** The MLflow UI's address (a path or an http(s) URL), `null` while unknown. */
  mlflowUi(): string | null;
  /** JupyterLab's base URL (`/user/alice/`). */
  baseUrl(): string;
  /** Runs `jupyter-air:open-mlflow` and `jupyter-air:open-workloads`. */
  commands: ICommandRunner;
}

/** The MLflow UI fragment of a run: its page in its experiment (or MLflow's direct run page). */
export function runFragment(run: IRunOwner): string | null {
  const id = run.run_id;
  if (!id) {
    return null;
  }
  const path = run.experiment_id
    ? `#/experiments/${encodeURIComponent(run.experiment_id)}/runs/${encodeURIComponent(id)}`
    : `#/runs/${encodeURIComponent(id)}`;
  return safeFragment(path);
}

/** A link that runs `command` with `args` on a plain click, and is a normal link otherwise. */
function commandLink(
  linker: IRunLinker,
  className: string,
  text: string,
  title: string,
  href: string | null,
  command: string,
  args: { [key: string]: string }
): HTMLAnchorElement {
  const link = newTabLink(className, text);
  link.title = title;
  if (href !== null) {
    link.href = href;
  }
  link.addEventListener('click', event => {
    if (href !== null && isNewTabClick(event)) {
      return; // the browser opens the href
    }
    event.preventDefault();
    runCommand(linker.commands, command, args);
  });
  return link;
}

/** The link to a run's page in the MLflow UI. */
export function runLink(
  linker: IRunLinker,
  run: IRunOwner,
  text: string,
  title: string
): HTMLAnchorElement | null {
  const fragment = runFragment(run);
  if (fragment === null) {
    return null;
  }
  return commandLink(
    linker,
    'jp-air-gpu-run-link',
    text,
    title,
    uiLink(linker.mlflowUi(), fragment),
    CommandIDs.openMlflow,
    { path: fragment }
  );
}

/** The link to a workload's job run page (the Workloads panel). */
export function jobLink(
  linker: IRunLinker,
  id: string,
  text: string,
  title: string
): HTMLAnchorElement | null {
  const job = jobId(id);
  if (job === null) {
    return null;
  }
  return commandLink(
    linker,
    'jp-air-gpu-job-link',
    text,
    title,
    workloadUrl(job, linker.baseUrl()),
    CommandIDs.openWorkloads,
    { id: job }
  );
}
