/**
 * What the Logs view shows instead of lines: loading, no access (403: the server's message
 * says why), no such job run, logs purged by the retention policy, a failure to read, and the
 * empty log (nothing matches the filters, no output yet, or an empty log).
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { h, setHidden, setText } from '../common/dom';
import { LogsModel } from './model';

export class LogsStates {
  constructor(model: LogsModel, trans: TranslationBundle) {
    this._model = model;
    this._trans = trans;
    this.node.append(this._title, this._detail);
  }

  /** The message's element (hidden while there are lines). */
  readonly node = h('div', 'jp-air-logs-message');

  render(): void {
    const state = this._model.state;
    const [title, detail] = this._text();
    this.node.dataset.state = state;
    setText(this._title, title);
    setText(this._detail, detail);
    setHidden(this._detail, !detail);
    setHidden(this.node, !title);
  }

  /** The title and the detail of the current state (none with lines). */
  private _text(): [string, string] {
    const trans = this._trans;
    const model = this._model;
    switch (model.state) {
      case 'loading':
        return [trans.__('Loading the logs…'), ''];
      case 'forbidden':
        return [
          trans.__("You don't have access to these logs"),
          model.error ?? ''
        ];
      case 'not-found':
        return [trans.__('No job run %1', model.jobId), model.error ?? ''];
      case 'purged':
        return [
          trans.__('These logs were removed by the retention policy'),
          trans.__(
            "Logs of job runs that ended long ago are purged (%1, 60 days by default). Each attempt's MLflow run keeps its logs as artifacts (%2).",
            'JUPYTER_AIR_LOG_RETENTION_DAYS',
            'logs/attempt_K/node_N.log'
          )
        ];
      case 'error':
        return [trans.__('Cannot read the logs'), model.error ?? ''];
      case 'empty':
        return [
          model.isFiltered
            ? trans.__('No lines match these filters')
            : model.live
              ? trans.__(
                  'No output yet: new lines appear here as the job writes them'
                )
              : trans.__('This log is empty'),
          model.purged
            ? trans.__('These logs were removed by the retention policy.')
            : ''
        ];
      default:
        return ['', ''];
    }
  }

  private readonly _model: LogsModel;
  private readonly _trans: TranslationBundle;
  private readonly _title = h('p', 'jp-air-logs-message-title');
  private readonly _detail = h('p', 'jp-air-logs-message-detail');
}
