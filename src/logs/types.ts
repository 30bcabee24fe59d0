/**
 * The logs part of the jupyter-air API (`air/api/workloads/{id}/logs`, see docs/workloads.md),
 * generated from the server's models (`src/api/models.ts`).
 *
 * Log lines are whatever a command printed: HTML, ANSI escape codes, anything. They are only
 * ever shown as text.
 */
export type { ILogLine, ILogPage, LogLevel } from '../api/models';
export { LOG_LEVELS } from '../api/models';
