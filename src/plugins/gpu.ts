/**
 * `jupyter-air:gpu`: the "GPU Resources" panel in the right sidebar, the "Open GPU Resources"
 * command (and palette entry), the panel restored with the layout, fed user activity (so it stops
 * polling when nobody is there) and theme changes (so charts stay readable). What it shows lives
 * in src/gpu/.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, IThemeManager } from '@jupyterlab/apputils';
import { ITranslator } from '@jupyterlab/translation';

import { CommandIDs } from '../commands';
import { loadTranslation } from '../common/translation';
import { watchActivity } from '../gpu/activity';
import { GpuModel } from '../gpu/model';
import { GpuPanel } from '../gpu/panel';
import { PlotlyRenderer } from '../gpu/plotly-renderer';
import { gpuIcon } from '../icons';
import { addCommand, addSidePanel } from './shell';

/** The id of the GPU Resources panel (stable: the layout restorer and the UI tests use it). */
export const GPU_PANEL_ID = 'jupyter-air-gpu';

export const gpuPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-air:gpu',
  description: 'GPU Resources side panel: GPU and host telemetry of this node.',
  autoStart: true,
  optional: [ITranslator, ICommandPalette, ILayoutRestorer, IThemeManager],
  activate: (
    app: JupyterFrontEnd,
    translator: ITranslator | null,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    themeManager: IThemeManager | null
  ) => {
    const trans = loadTranslation(translator);
    const model = new GpuModel();
    const panel = new GpuPanel({
      model,
      translator,
      renderer: new PlotlyRenderer(),
      openPath: path => {
        app.commands
          .execute('docmanager:open', { path })
          .catch(reason =>
            console.warn(`jupyter-air: cannot open ${path}`, reason)
          );
      }
    });
    addSidePanel(app, restorer, panel, {
      id: GPU_PANEL_ID,
      icon: gpuIcon,
      rank: 1000
    });

    const activity = watchActivity(document, () => model.noteActivity());
    const onTheme = () => panel.themeChanged();
    themeManager?.themeChanged.connect(onTheme);
    panel.disposed.connect(() => {
      themeManager?.themeChanged.disconnect(onTheme);
      activity.dispose();
      model.dispose();
    });

    addCommand(
      app,
      palette,
      trans.__('GPU Resources'),
      CommandIDs.openGpuResources,
      {
        label: trans.__('Open GPU Resources'),
        caption: trans.__(
          'Show GPU utilisation, memory and processes of this node'
        ),
        icon: gpuIcon,
        describedBy: { args: { type: 'object', properties: {} } },
        execute: () => {
          app.shell.activateById(panel.id);
        }
      }
    );
  }
};
