/**
 * The top of the GPU panel and its status lines: title and Refresh button, the meta line (node,
 * or "All nodes" on the overview, "simulated" badge, driver, "updated N s ago") and the banners
 * that say what state the panel is in (loading, paused with Resume, request error, a node that
 * stopped reporting, sampling error, no GPU, sampling held on by).
 *
 * Everything here is derived from the model alone; the panel decides which other sections show.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { alertBox, button, h, setHidden, setText } from '../common/dom';
import { NONE } from '../common/text';
import { formatAge, formatDuration, formatTime } from './format';
import { GpuModel } from './model';
import { stateText } from './overview';

/** Header, meta line and status banners. */
export class PanelHeader {
  constructor(model: GpuModel, trans: TranslationBundle) {
    this._model = model;
    this._trans = trans;

    this.header = h('div', 'jp-air-gpu-header jp-air-sidepanel-header');
    const title = h(
      'h2',
      'jp-air-gpu-title jp-air-sidepanel-title',
      trans.__('GPU Resources')
    );
    this._refresh = button(
      'jp-air-gpu-refresh jp-air-sidepanel-button',
      trans.__('Refresh'),
      () => {
        void this._model.refresh();
      },
      trans.__('Take a sample now')
    );
    this.header.append(title, this._refresh);

    this.meta = h('div', 'jp-air-gpu-meta');
    this._node = h('span', 'jp-air-gpu-node', NONE);
    this._node.title = trans.__('Node');
    this._backend = h(
      'span',
      'jp-air-gpu-backend jp-air-badge',
      trans.__('simulated')
    );
    this._backend.title = trans.__(
      'Simulated telemetry: these are not real GPU readings'
    );
    this._backend.hidden = true;
    this._driver = h('span', 'jp-air-gpu-driver');
    this._driver.hidden = true;
    this._updated = h('span', 'jp-air-gpu-updated', formatAge(trans, null));
    this.meta.append(this._node, this._backend, this._driver, this._updated);

    this._loading = h(
      'div',
      'jp-air-gpu-loading',
      trans.__('Loading GPU telemetry…')
    );

    this._paused = h('div', 'jp-air-gpu-paused');
    this._paused.setAttribute('role', 'status');
    this._pausedText = h('span', 'jp-air-gpu-paused-text');
    const resume = button(
      'jp-air-gpu-resume jp-air-sidepanel-button',
      trans.__('Resume'),
      () => this._model.resume()
    );
    this._paused.append(this._pausedText, resume);
    this._paused.hidden = true;

    this._error = alertBox('jp-air-gpu-error');
    this._error.hidden = true;

    this._nodeState = h('div', 'jp-air-gpu-nodestate');
    this._nodeState.setAttribute('role', 'status');
    this._nodeState.hidden = true;

    this._warning = h('div', 'jp-air-gpu-warning');
    this._warning.hidden = true;

    this._nogpu = h('div', 'jp-air-gpu-nogpu');
    this._nogpu.hidden = true;

    this.banners = [
      this._loading,
      this._paused,
      this._error,
      this._nodeState,
      this._warning,
      this._nogpu
    ];

    this.held = h('div', 'jp-air-gpu-held');
    this.held.hidden = true;
  }

  /** Title and Refresh button. */
  readonly header: HTMLElement;
  /** Node, backend badge, driver and age of the data. */
  readonly meta: HTMLElement;
  /** The status banners shown under the meta line, in order. */
  readonly banners: readonly HTMLElement[];
  /** "Sampling kept on by …", shown at the bottom of the panel. */
  readonly held: HTMLElement;

  /** Update everything from the model. */
  render(): void {
    const trans = this._trans;
    const model = this._model;
    const overview = model.view === 'overview';
    const payload = overview ? null : model.payload;
    const status = model.status;

    setHidden(
      this._backend,
      overview
        ? !model.nodes.some(node => node.backend === 'simulated')
        : payload?.backend !== 'simulated'
    );
    setText(
      this._node,
      overview
        ? trans.__('All nodes')
        : payload?.node || model.selectedNode || NONE
    );
    const driver = payload?.driver_version;
    setHidden(this._driver, !driver);
    setText(this._driver, driver ? trans.__('driver %1', driver) : '');

    setHidden(this._loading, status !== 'loading');

    setHidden(this._paused, status !== 'paused');
    setText(
      this._pausedText,
      trans.__(
        'Paused after %1 without activity',
        formatDuration(trans, model.idleTimeoutS)
      )
    );

    const error = model.error;
    setHidden(this._error, error === null);
    setText(
      this._error,
      error === null
        ? ''
        : payload || (overview && model.overview)
          ? trans.__('Could not update: %1', error)
          : trans.__('Could not load GPU telemetry: %1', error)
    );

    // a node whose agent stopped reporting: what is shown is its last word
    const state = payload?.state ?? 'live';
    setHidden(this._nodeState, state === 'live');
    setText(
      this._nodeState,
      state === 'live'
        ? ''
        : trans.__(
            'This node is %1: no report since %2. These are its last values.',
            stateText(trans, state),
            formatTime(trans, payload?.last_seen ?? payload?.latest?.t)
          )
    );
    this._nodeState.dataset.state = state;

    const warning = payload?.error ?? null;
    setHidden(this._warning, !warning);
    setText(
      this._warning,
      warning ? trans.__('Sampling error: %1', warning) : ''
    );

    const noGpu =
      !!payload &&
      payload.backend !== 'nvml' &&
      payload.backend !== 'simulated';
    setHidden(this._nogpu, !noGpu);
    setText(
      this._nogpu,
      noGpu ? payload?.reason || trans.__('No GPU was found on this node.') : ''
    );

    const held = payload?.held_by ?? [];
    setHidden(this.held, held.length === 0);
    setText(
      this.held,
      held.length ? trans.__('Sampling kept on by: %1', held.join(', ')) : ''
    );

    const busy = model.isBusy;
    if (this._refresh.disabled !== busy) {
      this._refresh.disabled = busy;
    }
  }

  /** "updated N s ago" (ticks every second while the panel is shown). */
  renderAge(): void {
    setText(
      this._updated,
      formatAge(this._trans, this._model.secondsSinceUpdate())
    );
  }

  private readonly _model: GpuModel;
  private readonly _trans: TranslationBundle;
  private readonly _refresh: HTMLButtonElement;
  private readonly _node: HTMLElement;
  private readonly _backend: HTMLElement;
  private readonly _driver: HTMLElement;
  private readonly _updated: HTMLElement;
  private readonly _loading: HTMLElement;
  private readonly _paused: HTMLElement;
  private readonly _pausedText: HTMLElement;
  private readonly _error: HTMLElement;
  private readonly _nodeState: HTMLElement;
  private readonly _warning: HTMLElement;
  private readonly _nogpu: HTMLElement;
}
