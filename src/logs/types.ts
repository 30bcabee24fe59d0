/**
 * The logs part of the jupyter-air API (`air/api/workloads/{id}/logs`, see docs/workloads.md).
 *
 * Log lines are whatever a command printed: HTML, ANSI escape codes, anything. They are only
 * ever shown as text.
 */

export type LogLevel = 'info' | 'warning' | 'error';

export const LOG_LEVELS: readonly LogLevel[] = ['info', 'warning', 'error'];

/** One log line. */
export interface ILogLine {
  /** Arrival time, ISO 8601 UTC to the millisecond. */
  t: string;
  node: number;
  attempt: number;
  stream: 'stdout' | 'stderr' | string;
  level: LogLevel | string;
  text: string;
  /** The cursor just after this line. */
  pos: string;
}

/** `GET air/api/workloads/{id}/logs?…`. */
export interface ILogPage {
  job_id: string;
  node: number;
  attempt: number;
  lines: ILogLine[];
  /** Continue forward (following) from here. */
  next: string;
  /** The lines before the first one (`before=`); `null` at the start. */
  prev: string | null;
  /** The limit was reached: there may be more lines in that direction. */
  more: boolean;
  /** Nothing more will ever be written after `next`. */
  complete: boolean;
  /** The logs were removed by the retention policy. */
  purged: boolean;
  job_status: string;
  attempts: number;
}
