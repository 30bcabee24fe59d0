/**
 * The JupyterLab plugins of jupyter-air.
 *
 * `jupyter-air:gpu` puts the "GPU Resources" panel in the right sidebar, adds the
 * "Open GPU Resources" command (and palette entry), restores the panel with the layout, feeds it
 * user activity (so it stops polling when nobody is there) and theme changes (so charts stay
 * readable). Everything it shows lives in src/gpu/.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, IThemeManager } from '@jupyterlab/apputils';

import { watchActivity } from './gpu/activity';
import { GpuModel } from './gpu/model';
import { GpuPanel } from './gpu/panel';
import { PlotlyRenderer } from './gpu/plotly-renderer';
import { gpuIcon } from './icons';

/** Command ids. */
export namespace CommandIDs {
  export const openGpuResources = 'jupyter-air:open-gpu-resources';
}

/** The id of the GPU Resources panel (stable: the layout restorer and the UI tests use it). */
export const GPU_PANEL_ID = 'jupyter-air-gpu';

const gpuPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-air:gpu',
  description: 'GPU Resources side panel: GPU and host telemetry of this node.',
  autoStart: true,
  optional: [ICommandPalette, ILayoutRestorer, IThemeManager],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    themeManager: IThemeManager | null
  ) => {
    const model = new GpuModel();
    const panel = new GpuPanel({
      model,
      renderer: new PlotlyRenderer(),
      openPath: path => {
        app.commands
          .execute('docmanager:open', { path })
          .catch(reason =>
            console.warn(`jupyter-air: cannot open ${path}`, reason)
          );
      }
    });
    panel.id = GPU_PANEL_ID;
    panel.title.icon = gpuIcon;
    panel.title.caption = 'GPU Resources';
    app.shell.add(panel, 'right', { rank: 1000 });
    if (restorer) {
      restorer.add(panel, GPU_PANEL_ID);
    }

    const activity = watchActivity(document, () => model.noteActivity());
    if (themeManager) {
      themeManager.themeChanged.connect(() => panel.themeChanged());
    }
    panel.disposed.connect(() => {
      activity.dispose();
      model.dispose();
    });

    app.commands.addCommand(CommandIDs.openGpuResources, {
      label: 'Open GPU Resources',
      caption: 'Show GPU utilisation, memory and processes of this node',
      icon: gpuIcon,
      execute: () => {
        app.shell.activateById(panel.id);
      }
    });
    if (palette) {
      palette.addItem({
        command: CommandIDs.openGpuResources,
        category: 'GPU Resources'
      });
    }
  }
};

const plugins: JupyterFrontEndPlugin<any>[] = [gpuPlugin];

export default plugins;
