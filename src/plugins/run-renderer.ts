/**
 * `jupyter-air:mlflow-run-renderer`: renders run displays
 * (`application/vnd.jupyter-air.run+json`) in cell outputs (src/mlflow/run-renderer.ts).
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ITranslator } from '@jupyterlab/translation';

import { createRunRendererFactory } from '../mlflow/run-renderer';

export const runRendererPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-air:mlflow-run-renderer',
  description:
    'Renders MLflow run displays (application/vnd.jupyter-air.run+json).',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  optional: [ITranslator],
  activate: (
    app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    translator: ITranslator | null
  ) => {
    rendermime.addFactory(
      createRunRendererFactory(app.commands, translator),
      10
    );
  }
};
