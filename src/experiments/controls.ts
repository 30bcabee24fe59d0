/**
 * The Experiment panel's controls: the experiment picker (this notebook's experiment, then every
 * experiment by name), the status filter and "Back to this notebook's experiment".
 */
import { TranslationBundle } from '@jupyterlab/translation';

import {
  button,
  h,
  labelled,
  setAttr,
  setHidden,
  setOptions,
  setValue
} from '../common/dom';
import { statusLabel } from '../common/status';
import { NONE } from '../common/text';
import { ExperimentsModel, STATUS_FILTERS, StatusFilter } from './model';

/** The value of the picker's "this notebook's experiment" entry. */
const NOTEBOOK_OPTION = '';

export class ExperimentControls {
  constructor(model: ExperimentsModel, trans: TranslationBundle) {
    this._model = model;
    this._trans = trans;
    this.node = h('div', 'jp-air-exp-controls');

    this._picker = h('select', 'jp-air-exp-select');
    this._picker.addEventListener('focus', () => {
      void this._model.refreshExperiments();
    });
    this._picker.addEventListener('change', () => {
      const value = this._picker.value;
      this._model.selectExperiment(value === NOTEBOOK_OPTION ? null : value);
    });

    this._filter = h('select', 'jp-air-exp-filter');
    this._filter.title = trans.__('Show only runs with this status');
    setOptions(
      this._filter,
      STATUS_FILTERS.map(filter => [
        filter,
        filter === 'ALL' ? trans.__('All') : statusLabel(trans, filter)
      ])
    );
    this._filter.addEventListener('change', () => {
      this._model.setFilter(this._filter.value as StatusFilter);
    });

    this._back = button(
      'jp-air-exp-back jp-air-sidepanel-button',
      trans.__("Back to this notebook's experiment"),
      () => this._model.backToNotebook()
    );
    this.node.append(
      labelled(
        'jp-air-exp-control',
        'jp-air-exp-control-label',
        trans.__('Experiment'),
        this._picker
      ),
      labelled(
        'jp-air-exp-control',
        'jp-air-exp-control-label',
        trans.__('Status'),
        this._filter
      ),
      this._back
    );
  }

  /** The controls' element. */
  readonly node: HTMLDivElement;

  render(): void {
    const model = this._model;
    setHidden(
      this._back,
      model.selectedExperimentId === null || model.notebookPath === null
    );
    this._renderPicker();
    setValue(this._filter, model.filter);
  }

  /** The experiment picker: this notebook's experiment, then every experiment by name. */
  private _renderPicker(): void {
    const trans = this._trans;
    const model = this._model;
    const picked = model.selectedExperimentId;
    const entries: [string, string][] = [];
    if (model.notebookPath !== null || picked === null) {
      entries.push([
        NOTEBOOK_OPTION,
        model.notebookPath !== null
          ? trans.__("This notebook's experiment")
          : NONE
      ]);
    }
    const experiments = model.experiments;
    if (picked !== null && !experiments.some(e => e.experiment_id === picked)) {
      entries.push([
        picked,
        model.experimentName ?? trans.__('Experiment %1', picked)
      ]);
    }
    for (const e of experiments) {
      entries.push([e.experiment_id, e.name || e.experiment_id]);
    }
    setOptions(this._picker, entries);
    setValue(this._picker, picked ?? NOTEBOOK_OPTION);
    setAttr(
      this._picker,
      'title',
      model.experimentsError
        ? trans.__('Cannot list experiments: %1', model.experimentsError)
        : trans.__('Show the runs of another experiment')
    );
  }

  private readonly _model: ExperimentsModel;
  private readonly _trans: TranslationBundle;
  private readonly _picker: HTMLSelectElement;
  private readonly _filter: HTMLSelectElement;
  private readonly _back: HTMLButtonElement;
}
