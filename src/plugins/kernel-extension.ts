/**
 * `jupyter-air:kernel-extension`: loads jupyter-air's IPython extension into Python notebook
 * kernels (src/kernel-extension.ts), unless the `autoLoad` setting says not to.
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';

import { KernelExtensionLoader, WIDGET_VIEW_MIME } from '../kernel-extension';

export const kernelExtensionPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-air:kernel-extension',
  description:
    "Loads jupyter-air's IPython extension into Python notebook kernels (run links for mlflow.start_run()).",
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ISettingRegistry],
  activate: (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker,
    settings: ISettingRegistry | null
  ) => {
    let enabled = true;
    if (settings) {
      settings
        .load(kernelExtensionPlugin.id)
        .then(loaded => {
          const read = () => {
            enabled = loaded.get('autoLoad').composite !== false;
          };
          read();
          loaded.changed.connect(read);
        })
        .catch(reason =>
          console.warn('jupyter-air: kernel extension settings', reason)
        );
    }
    const loader = new KernelExtensionLoader(
      () => enabled,
      kernel => {
        const spec =
          app.serviceManager.kernelspecs.specs?.kernelspecs[kernel.name];
        return spec ? spec.language.toLowerCase() === 'python' : undefined;
      }
    );
    notebooks.widgetAdded.connect((_, panel) => {
      const watching = loader.watch(panel.sessionContext, () =>
        panel.content.rendermime.mimeTypes.includes(WIDGET_VIEW_MIME)
      );
      panel.disposed.connect(() => watching.dispose());
    });
  }
};
