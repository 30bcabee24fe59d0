/**
 * The Logs view's status line: what is shown ("1,234 lines matching · attempt 2 · job running"),
 * whether it follows the job ("Following new lines", or paused with Resume), and a notice that
 * goes away after a few seconds ("Copied 3 lines") unless a failure to follow takes its place.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { Debouncer } from '@lumino/polling';

import { button, h, setHidden, setText } from '../common/dom';
import { statusLabel } from '../common/status';
import { LogsModel } from './model';

/** Milliseconds a notice stays. */
export const NOTICE_MS = 3000;

export class LogsStatusLine {
  constructor(
    model: LogsModel,
    trans: TranslationBundle,
    onResume: () => void
  ) {
    this._model = model;
    this._trans = trans;
    this.node = h('div', 'jp-air-logs-status');
    this._follow.setAttribute('role', 'status');
    this._resume = button(
      'jp-air-logs-resume jp-air-logs-button',
      trans.__('Resume'),
      onResume,
      trans.__('Follow new lines again')
    );
    this._notice.setAttribute('role', 'status');
    this._clearNotice = new Debouncer(() => {
      this._noticeShown = false;
      this.render();
    }, NOTICE_MS);
    this.node.append(this._summary, this._follow, this._resume, this._notice);
  }

  /** The status line's element. */
  readonly node: HTMLDivElement;

  /** Say `text` for a few seconds. */
  notify(text: string): void {
    this._noticeShown = true;
    setText(this._notice, text);
    void this._clearNotice.invoke();
  }

  render(): void {
    const trans = this._trans;
    const model = this._model;
    const state = model.state;
    const live = model.live;
    setText(this._summary, this._summaryText());

    const showFollow = live && (state === 'lines' || state === 'empty');
    const paused = model.paused && showFollow;
    setText(
      this._follow,
      !showFollow
        ? ''
        : paused
          ? trans.__('Following paused — scroll to the bottom or click Resume')
          : model.following
            ? trans.__('Following new lines')
            : ''
    );
    this._follow.classList.toggle('jp-mod-paused', paused);
    setHidden(this._follow, !this._follow.textContent);
    setHidden(this._resume, !paused);

    const stale =
      state === 'lines' && model.error
        ? trans.__('Cannot follow: %1', model.error)
        : '';
    if (stale || !this._noticeShown) {
      setText(this._notice, stale);
    }
  }

  dispose(): void {
    this._clearNotice.dispose();
  }

  /** "1,234 lines matching (scroll up for older) · attempt 2 · node 1 · job running". */
  private _summaryText(): string {
    const trans = this._trans;
    const model = this._model;
    const parts: string[] = [];
    if (model.state === 'lines') {
      const count = model.lines.length;
      // %1 is the count, %2 the count as the user reads numbers
      let lines = model.isFiltered
        ? trans._n(
            '%2 line matching',
            '%2 lines matching',
            count,
            count.toLocaleString()
          )
        : trans._n('%2 line', '%2 lines', count, count.toLocaleString());
      if (model.hasOlder) {
        lines = trans.__('%1 (scroll up for older)', lines);
      }
      parts.push(lines);
      if (model.filters.attempt !== null || model.attempts > 1) {
        parts.push(trans.__('attempt %1', model.attempt));
      }
      if (model.nodes > 1) {
        parts.push(trans.__('node %1', model.filters.node));
      }
    }
    const status = model.jobStatus;
    if (status) {
      parts.push(trans.__('job %1', statusLabel(trans, status).toLowerCase()));
    }
    return parts.join(' · ');
  }

  private readonly _model: LogsModel;
  private readonly _trans: TranslationBundle;
  private readonly _summary = h('span', 'jp-air-logs-summary');
  private readonly _follow = h('span', 'jp-air-logs-follow');
  private readonly _resume: HTMLButtonElement;
  private readonly _notice = h('span', 'jp-air-logs-notice');
  private readonly _clearNotice: Debouncer;
  private _noticeShown = false;
}
