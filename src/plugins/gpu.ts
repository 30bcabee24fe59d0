/**
 * `jupyter-air:gpu`: the "GPU Resources" panel in the right sidebar, the "Open GPU Resources"
 * command (and palette entry, with an optional `node`), the panel restored with the layout and
 * the node picked in it kept in the layout's state (so it survives a reload), fed user activity
 * (so it stops polling when nobody is there) and theme changes (so charts stay readable). Its
 * run and job links open in the MLflow tab and the Workloads panel. What it shows lives in
 * src/gpu/.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, IThemeManager } from '@jupyterlab/apputils';
import { IStateDB } from '@jupyterlab/statedb';
import { ServerConnection } from '@jupyterlab/services';
import { ITranslator } from '@jupyterlab/translation';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';

import { CommandIDs, stringArg } from '../commands';
import { loadTranslation } from '../common/translation';
import { watchActivity } from '../gpu/activity';
import { lazyRenderer } from '../gpu/chart';
import { GpuModel } from '../gpu/model';
import { GpuPanel } from '../gpu/panel';
import { statusUiUrl, defaultUiUrl } from '../mlflow/links';
import { gpuIcon } from '../icons';
import { IMlflowStatusStore } from '../tokens';
import { addCommand, addSidePanel } from './shell';

/** The id of the GPU Resources panel (stable: the layout restorer and the UI tests use it). */
export const GPU_PANEL_ID = 'jupyter-air-gpu';

/** Where the panel's state (the node picked) is kept in the layout's state database. */
export const GPU_STATE_KEY = 'jupyter-air:gpu';

/** The node saved in the state database, `null` for none. */
function savedNode(value: unknown): string | null {
  const node =
    value && typeof value === 'object'
      ? (value as ReadonlyPartialJSONObject).node
      : null;
  return typeof node === 'string' && node ? node : null;
}

export const gpuPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-air:gpu',
  description: 'GPU Resources side panel: GPU and host telemetry of this node.',
  autoStart: true,
  optional: [
    ITranslator,
    ICommandPalette,
    ILayoutRestorer,
    IThemeManager,
    IStateDB,
    IMlflowStatusStore
  ],
  activate: (
    app: JupyterFrontEnd,
    translator: ITranslator | null,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    themeManager: IThemeManager | null,
    state: IStateDB | null,
    mlflow: IMlflowStatusStore | null
  ) => {
    const trans = loadTranslation(translator);
    const settings = ServerConnection.makeSettings();
    const model = new GpuModel();
    if (state) {
      // the node picked before the reload: no request before it is known
      model.restoreNode(state.fetch(GPU_STATE_KEY).then(savedNode));
      model.selectionChanged.connect((_, node) => {
        state
          .save(GPU_STATE_KEY, { node })
          .catch(reason =>
            console.warn('jupyter-air: cannot save the GPU panel state', reason)
          );
      });
    }
    const panel = new GpuPanel({
      model,
      translator,
      renderer: lazyRenderer(() =>
        import('../gpu/uplot-renderer').then(m => new m.UplotRenderer())
      ),
      linker: {
        commands: app.commands,
        baseUrl: () => settings.baseUrl,
        mlflowUi: () => {
          const status = mlflow?.latest ?? null;
          return status ? statusUiUrl(status) : defaultUiUrl();
        }
      },
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
          'Show GPU utilisation, memory and processes of every node'
        ),
        icon: gpuIcon,
        describedBy: {
          args: {
            type: 'object',
            properties: {
              node: {
                type: 'string',
                description: trans.__(
                  'Show this node ("" for the overview of every node)'
                )
              }
            }
          }
        },
        execute: args => {
          if (typeof args.node === 'string') {
            model.setNode(stringArg(args, 'node') ?? null);
          }
          app.shell.activateById(panel.id);
        }
      }
    );
  }
};
