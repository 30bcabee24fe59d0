/**
 * The GPU panel's way between nodes, shown when there is more than one: a node selector (every
 * node by name, and "All nodes" for the overview) and, on a node's view, a button back to the
 * overview. What it shows comes from the model; picking goes through `GpuModel.setNode`.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { button, h, setHidden, setOptions, setValue } from '../common/dom';
import { GpuModel } from './model';

/** The node selector and the way back. */
export class NodeNav {
  constructor(model: GpuModel, trans: TranslationBundle) {
    this._model = model;
    this._trans = trans;
    this.node = h('div', 'jp-air-gpu-nav');
    this._back = button(
      'jp-air-gpu-back jp-air-sidepanel-button',
      trans.__('← All nodes'),
      () => model.setNode(null),
      trans.__('Back to the overview of every node')
    );
    this._select = h('select', 'jp-air-gpu-node-select jp-mod-styled');
    this._select.setAttribute('aria-label', trans.__('Node'));
    this._select.title = trans.__('Show one node, or all of them');
    this._select.addEventListener('change', () => {
      model.setNode(this._select.value || null);
    });
    this.node.append(this._back, this._select);
    this.node.hidden = true;
  }

  /** The bar's element. */
  readonly node: HTMLElement;

  render(): void {
    const model = this._model;
    const selected = model.selectedNode;
    const shown = model.isCluster || selected !== null;
    setHidden(this.node, !shown);
    if (!shown) {
      return;
    }
    setHidden(this._back, model.view !== 'node');
    const names = model.nodeNames.slice();
    if (selected !== null && !names.includes(selected)) {
      names.push(selected); // picked before this server knew it (a restored choice)
    }
    setOptions(this._select, [
      ['', this._trans.__('All nodes (%1)', model.nodeNames.length)],
      ...names.map(name => [name, name] as const)
    ]);
    setValue(this._select, selected ?? '');
  }

  private readonly _model: GpuModel;
  private readonly _trans: TranslationBundle;
  private readonly _back: HTMLButtonElement;
  private readonly _select: HTMLSelectElement;
}
