/**
 * The facts of a job run's page: while it is queued its place in line and why it waits;
 * experiment, command, compute, attempts and retries, timeout, working folder, where it was
 * submitted from, by whom and when it started and ended, a supervisor not seen for a while; and
 * the workload YAML as it was submitted (or why there is none).
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { h, setHidden, setText } from '../common/dom';
import { NONE } from '../common/text';
import {
  attemptsText,
  commandText,
  computeText,
  formatTimeFull,
  queueText
} from './format';
import { IJob } from './types';

export class JobFacts {
  constructor(trans: TranslationBundle) {
    this._trans = trans;
    this.yaml = [
      h('h4', 'jp-air-wl-section', trans.__('Workload YAML')),
      this._yaml,
      this._noYaml
    ];
  }

  /** The facts (a description list). */
  readonly facts = h('dl', 'jp-air-wl-facts');
  /** The YAML's title, the YAML, and why there is none. */
  readonly yaml: readonly HTMLElement[];

  /** What the job run runs, where, with what, and when. */
  render(job: IJob): void {
    const trans = this._trans;
    const attempts = Array.isArray(job.attempts) ? job.attempts.length : 0;
    const facts: [string, string][] = [
      [trans.__('Experiment'), job.experiment_name || NONE],
      [trans.__('Command'), commandText(job.command) || NONE],
      [trans.__('Compute'), computeText(trans, job.compute)],
      [
        trans.__('Attempts'),
        typeof job.max_retries === 'number'
          ? trans.__(
              '%1 (retries: %2)',
              attemptsText(trans, attempts),
              job.max_retries
            )
          : attemptsText(trans, attempts)
      ],
      [
        trans.__('Timeout'),
        typeof job.timeout_minutes === 'number'
          ? trans.__('%1 min per attempt', job.timeout_minutes)
          : trans.__('none')
      ],
      [trans.__('Runs on'), whereText(trans, job)],
      [trans.__('Working folder'), job.working_dir || NONE],
      [
        trans.__('Submitted from'),
        job.notebook || job.spec_path || job.source || NONE
      ],
      [trans.__('User'), job.user || NONE],
      [trans.__('Submitted'), formatTimeFull(job.submitted_at) || NONE],
      [trans.__('Started'), formatTimeFull(job.started_at) || NONE],
      [trans.__('Ended'), formatTimeFull(job.ended_at) || NONE]
    ];
    const queue = job.status === 'QUEUED' ? queueText(trans, job.queue) : '';
    if (queue) {
      // waiting in its cluster's queue for resources in use: first, it is what happens now
      facts.unshift([trans.__('Queue'), queue]);
    }
    if (typeof job.supervisor_silent_s === 'number') {
      // an active job run whose supervisor stopped beating: the server ends it if it is gone
      const seconds = Math.round(job.supervisor_silent_s);
      facts.push([
        trans.__('Supervisor'),
        trans.__('not seen for %1 s', seconds)
      ]);
    }
    for (const warning of Array.isArray(job.warnings) ? job.warnings : []) {
      // what went wrong around the job run (MLflow unreachable, …), with its time
      facts.push([
        trans.__('Warning'),
        `${formatTimeFull(warning.t) || ''} ${warning.message}`.trim()
      ]);
    }
    this._renderYaml(job);
    const key = JSON.stringify(facts);
    if (key === this._key) {
      return;
    }
    this._key = key;
    this.facts.replaceChildren(
      ...facts.flatMap(([term, value]) => {
        const dd = h('dd', undefined, value);
        dd.title = value;
        return [h('dt', undefined, term), dd];
      })
    );
  }

  /** The YAML as submitted, or why there is none. */
  private _renderYaml(job: IJob): void {
    const trans = this._trans;
    const yaml = typeof job.spec_yaml === 'string' ? job.spec_yaml : '';
    setText(this._yaml, yaml);
    setHidden(this._yaml, !yaml);
    const noYaml = yaml
      ? ''
      : !job.spec_path && job.source === 'magic'
        ? trans.__(
            'Submitted from a notebook cell (%1); it runs: %2',
            '%%air_run',
            commandText(job.command)
          )
        : job.source === 'distributed'
          ? trans.__(
              'Submitted by %1 from %2: each node runs the call the notebook sent.',
              '.distributed(remote=True)',
              job.notebook || trans.__('a kernel')
            )
          : trans.__('No YAML was kept for this job run.');
    setText(this._noYaml, noYaml);
    setHidden(this._noYaml, !noYaml);
  }

  private readonly _trans: TranslationBundle;
  private readonly _yaml = h('pre', 'jp-air-wl-yaml');
  private readonly _noYaml = h('div', 'jp-air-wl-no-yaml');
  private _key = '';
}

/** The backend and, for the last attempt, its nodes' hosts: "ray (10.0.0.5:6379): 10.0.0.7, …". */
export function whereText(trans: TranslationBundle, job: IJob): string {
  const backend = job.backend || 'local';
  const label = job.cluster
    ? trans.__('%1 (%2)', backend, job.cluster)
    : backend;
  const attempts = Array.isArray(job.attempts) ? job.attempts : [];
  const last = attempts.length ? attempts[attempts.length - 1] : undefined;
  const hosts = (last?.nodes ?? [])
    .map(node => node.host)
    .filter((host): host is string => typeof host === 'string' && !!host);
  const unique = [...new Set(hosts)];
  return unique.length ? trans.__('%1: %2', label, unique.join(', ')) : label;
}
