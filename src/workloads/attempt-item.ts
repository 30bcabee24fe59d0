/**
 * One attempt on a job run's page: its number, status, duration, why it ended, how each node
 * ended, the checkpoint it resumed from and saved, and its MLflow run, system metrics and logs. Built once per attempt, updated in place.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { ICommandRunner } from '../commands';
import { button, h, setAttr, setHidden, setText } from '../common/dom';
import { StatusBadge } from '../common/status';
import { num } from '../common/text';
import {
  attemptReason,
  checkpointText,
  elapsedMs,
  formatElapsed,
  formatTimeFull
} from './format';
import { MlflowLink } from './links';
import { IAttempt, IAttemptLinks, IJobNode, isActiveStatus } from './types';

/** How a node ended: `node 0: exit 0`, `node 1: SIGKILL`, `node 1: running`. */
export function nodeText(trans: TranslationBundle, node: IJobNode): string {
  const index = num(node.node) ?? '?';
  if (node.signal !== null && node.signal !== undefined) {
    return trans.__('node %1: %2', index, String(node.signal));
  }
  const code = num(node.exit_code);
  return code !== null
    ? trans.__('node %1: exit %2', index, code)
    : trans.__('node %1: running', index);
}

export class AttemptItem {
  constructor(
    trans: TranslationBundle,
    commands: ICommandRunner,
    openLogs: (attempt: number) => void
  ) {
    this._trans = trans;
    this.node = h('li', 'jp-air-wl-attempt');
    const line1 = h('div', 'jp-air-wl-attempt-line');
    this._title = h('span', 'jp-air-wl-attempt-title');
    this._status = new StatusBadge('jp-air-wl-attempt-status');
    this._duration = h('span', 'jp-air-wl-attempt-duration');
    line1.append(this._title, this._status.node, this._duration);
    this._reason = h('div', 'jp-air-wl-attempt-reason');
    this._nodes = h('div', 'jp-air-wl-attempt-nodes');
    this._checkpoint = h('div', 'jp-air-wl-attempt-checkpoint');
    const links = h('div', 'jp-air-wl-attempt-links');
    this._run = new MlflowLink(
      commands,
      'jp-air-wl-attempt-run',
      trans.__('MLflow run'),
      trans.__("This attempt's MLflow run")
    );
    this._metrics = new MlflowLink(
      commands,
      'jp-air-wl-attempt-metrics',
      trans.__('System metrics'),
      trans.__('CPU, memory and GPU of this attempt in the MLflow UI')
    );
    const logs = button(
      'jp-air-wl-link jp-air-wl-attempt-logs',
      trans.__('Logs'),
      () => openLogs(this._attempt),
      trans.__("This attempt's logs")
    );
    links.append(this._run.node, this._metrics.node, logs);
    this.node.append(line1, this._reason, this._nodes, this._checkpoint, links);
  }

  readonly node: HTMLLIElement;

  update(attempt: IAttempt, now: number): void {
    const trans = this._trans;
    this._attempt = num(attempt.attempt) ?? 0;
    this.node.dataset.attempt = String(this._attempt);
    this.node.dataset.status = String(attempt.status);
    setText(this._title, trans.__('Attempt %1', this._attempt));
    this._status.show(trans, attempt.status);
    const ms = elapsedMs(attempt, now);
    setText(
      this._duration,
      ms === null ? '' : formatElapsed(trans, attempt, now)
    );
    setAttr(
      this._duration,
      'title',
      [
        attempt.started_at
          ? trans.__('Started %1', formatTimeFull(attempt.started_at))
          : '',
        attempt.ended_at
          ? trans.__('Ended %1', formatTimeFull(attempt.ended_at))
          : ''
      ]
        .filter(Boolean)
        .join('\n')
    );
    const reason = isActiveStatus(attempt.status)
      ? ''
      : attemptReason(trans, attempt);
    setText(this._reason, reason);
    setHidden(this._reason, !reason);
    const nodes = Array.isArray(attempt.nodes) ? attempt.nodes : [];
    const nodesText = nodes.map(node => nodeText(trans, node)).join(' · ');
    setText(this._nodes, nodesText);
    setHidden(this._nodes, !nodesText);
    const checkpoint = checkpointText(trans, attempt);
    setText(this._checkpoint, checkpoint);
    setHidden(this._checkpoint, !checkpoint);
    const links: Partial<IAttemptLinks> =
      attempt.links && typeof attempt.links === 'object' ? attempt.links : {};
    this._run.update(links.run);
    this._metrics.update(links.system_metrics);
  }

  private readonly _trans: TranslationBundle;
  private readonly _title: HTMLSpanElement;
  private readonly _status: StatusBadge;
  private readonly _duration: HTMLSpanElement;
  private readonly _reason: HTMLDivElement;
  private readonly _nodes: HTMLDivElement;
  private readonly _checkpoint: HTMLDivElement;
  private readonly _run: MlflowLink;
  private readonly _metrics: MlflowLink;
  private _attempt = 0;
}
