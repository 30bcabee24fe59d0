/**
 * One log line in full, below the Logs view's list (a row shows only what fits): when, level,
 * stream, attempt and node, and the whole text without its ANSI codes.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { button, h, setHidden, setText } from '../common/dom';
import { stripAnsi } from './ansi';
import { levelLabel } from './line';
import { ILogLine } from './types';

export class LineDetail {
  constructor(trans: TranslationBundle, onClose: () => void) {
    this._trans = trans;
    const header = h('div', 'jp-air-logs-detail-header');
    header.append(
      this._meta,
      button(
        'jp-air-logs-detail-close jp-air-logs-button',
        trans.__('Close'),
        onClose
      )
    );
    this.node.append(header, this._text);
    this.node.hidden = true;
  }

  /** The detail's element (hidden when no line is shown). */
  readonly node = h('div', 'jp-air-logs-detail');

  /** Show a line in full (`null`: hide). */
  show(line: ILogLine | null): void {
    setHidden(this.node, line === null);
    if (line !== null) {
      setText(
        this._meta,
        this._trans.__(
          '%1 · %2 · %3 · attempt %4 · node %5',
          line.t,
          levelLabel(String(line.level)),
          line.stream,
          line.attempt,
          line.node
        )
      );
      setText(this._text, stripAnsi(String(line.text ?? '')));
    }
  }

  private readonly _trans: TranslationBundle;
  private readonly _meta = h('span', 'jp-air-logs-detail-meta');
  private readonly _text = h('pre', 'jp-air-logs-detail-text');
}
