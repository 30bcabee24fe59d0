/**
 * The workloads part of the jupyter-air API (`air/api/workloads`, see docs/workloads.md): job
 * runs, their attempts and nodes. The types are generated from the server's models
 * (`src/api/models.ts`); these are the names the panels know them by.
 *
 * Everything here comes from the server, about commands users wrote: views treat every field as
 * possibly missing and show all of it as text.
 */
import {
  ACTIVE_JOB_STATUSES,
  IJob as IJobRun,
  IJobDetail
} from '../api/models';

export type {
  ICompute,
  IJobAttempt as IAttempt,
  IJobNode,
  IJobQueue,
  IRunLinks as IAttemptLinks,
  IWorkloadsPage,
  JobStatus
} from '../api/models';
export {
  ACTIVE_JOB_STATUSES as ACTIVE_STATUSES,
  JOB_STATUSES
} from '../api/models';

/** A job run; the job page's (`GET air/api/workloads/{id}`) has its YAML too. */
export type IJob = IJobRun & Partial<Pick<IJobDetail, 'spec_yaml'>>;

/** Whether a job (or attempt) status means it may still change. */
export function isActiveStatus(status: unknown): boolean {
  return (
    typeof status === 'string' &&
    (ACTIVE_JOB_STATUSES as readonly string[]).includes(status)
  );
}
