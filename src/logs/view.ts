/**
 * The Logs view of a job run (a main-area tab): the toolbar (toolbar.ts: search, node, attempt,
 * levels, time range, Copy, Download), a status line that says what is shown and whether it
 * follows the job (status-line.ts), the lines in a virtual list (virtual-list.ts) or a message
 * instead of them (states.ts), and one line in full (line-detail.ts).
 *
 * Lines are text: no markup is ever parsed (see line.ts). The model (model.ts) reads the lines and
 * follows while the view is shown; hidden, nothing is sent.
 */
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { h, setHidden, setText } from '../common/dom';
import { ShownWidget } from '../common/shown-widget';
import { loadTranslation } from '../common/translation';
import { jobName } from '../workloads/format';
import { ILogFilters, logsDownloadUrl } from './api';
import { ILogsChange, LogsModel } from './model';
import { LogsStates } from './states';
import { LogsStatusLine } from './status-line';
import { CopyText, copyToClipboard } from '../common/clipboard';
import { LogsToolbar } from './toolbar';
import { LogsList } from './virtual-list';

export class LogsView extends ShownWidget {
  constructor(options: LogsView.IOptions) {
    super();
    this.addClass('jp-air-logs');
    const model = (this._model = options.model);
    const trans = (this._trans = loadTranslation(options.translator));
    this.node.dataset.jobId = model.jobId;

    this._toolbar = new LogsToolbar({
      model,
      trans,
      copyText: options.copyText ?? copyToClipboard,
      downloadUrl:
        options.downloadUrl ??
        (filters => logsDownloadUrl(model.jobId, filters)),
      notify: text => this._status.notify(text)
    });
    this._status = new LogsStatusLine(model, trans, () => {
      model.resume();
      this._list.scrollToBottom();
    });
    this._states = new LogsStates(model, trans);
    this._list = new LogsList(model, trans, () => this._toolbar.pattern);
    this.node.append(
      this._toolbar.node,
      this._status.node,
      this._older,
      this._states.node,
      this._list.viewport,
      this._list.detail.node
    );

    model.changed.connect(this._onChange, this);
    this._render();
  }

  get model(): LogsModel {
    return this._model;
  }

  /** The viewport (scrolled by the user and the tests). */
  get viewport(): HTMLDivElement {
    return this._list.viewport;
  }

  /** How many rows are in the DOM. */
  get renderedRows(): number {
    return this._list.renderedRows;
  }

  /** Draw the rows on screen now (normally in an animation frame after a scroll). */
  renderRows(): void {
    if (!this.isDisposed) {
      this._list.renderRows();
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._model.changed.disconnect(this._onChange, this);
    this._model.stop();
    this._toolbar.dispose();
    this._status.dispose();
    this._list.dispose();
    super.dispose();
  }

  protected onShown(): void {
    this._model.start();
    this._list.scheduleRender();
  }

  protected onHidden(): void {
    this._model.stop();
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    super.onResize(msg);
    this._list.scheduleRender();
  }

  private _onChange(_: LogsModel, change: ILogsChange): void {
    if (!this.isDisposed) {
      this._render();
      this._list.changed(change);
    }
  }

  /** Everything but the rows: title, toolbar, status line, message. */
  private _render(): void {
    const model = this._model;
    const job = model.job;
    this.title.label = this._trans.__(
      'Logs: %1',
      job ? jobName(job) : model.jobId
    );
    this.title.caption = this._trans.__('Logs of job run %1', model.jobId);
    const state = model.state;
    this.node.dataset.state = state;
    this.node.dataset.following = model.following ? 'true' : 'false';
    this.node.dataset.paused = model.paused && model.live ? 'true' : 'false';
    this._toolbar.render();
    this._status.render();
    this._states.render();
    setText(
      this._older,
      model.loadingOlder ? this._trans.__('Loading older lines…') : ''
    );
    setHidden(this._older, !model.loadingOlder);
    setHidden(this._list.viewport, state !== 'lines');
  }

  private readonly _model: LogsModel;
  private readonly _trans: TranslationBundle;
  private readonly _toolbar: LogsToolbar;
  private readonly _status: LogsStatusLine;
  private readonly _older = h('div', 'jp-air-logs-older');
  private readonly _states: LogsStates;
  private readonly _list: LogsList;
}

export namespace LogsView {
  export interface IOptions {
    model: LogsModel;
    /** Copies to the clipboard; defaults to `navigator.clipboard` with a fallback. */
    copyText?: CopyText;
    /** The download URL of filters; defaults to the server's. */
    downloadUrl?: (filters: Readonly<ILogFilters>) => string;
    /** Translates the view's strings (default: as written). */
    translator?: ITranslator | null;
  }
}
