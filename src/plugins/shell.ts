/**
 * How the plugins put things in JupyterLab: a side panel in the right sidebar (restored with the
 * layout) and a command with its entry in the command palette.
 */
import { ILayoutRestorer, JupyterFrontEnd } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

/** Put a side panel in the right sidebar, restored with the layout. */
export function addSidePanel(
  app: JupyterFrontEnd,
  restorer: ILayoutRestorer | null,
  panel: Widget,
  options: { id: string; icon: LabIcon; rank: number }
): void {
  panel.id = options.id;
  panel.title.icon = options.icon;
  app.shell.add(panel, 'right', { rank: options.rank });
  if (restorer) {
    restorer.add(panel, options.id);
  }
}

/** The options of a command (Lumino's `CommandRegistry.ICommandOptions`). */
export type CommandOptions = Parameters<
  JupyterFrontEnd['commands']['addCommand']
>[1];

/** Add a command, and its entry in the command palette (when there is one) under `category`. */
export function addCommand(
  app: JupyterFrontEnd,
  palette: ICommandPalette | null,
  category: string,
  id: string,
  options: CommandOptions
): void {
  app.commands.addCommand(id, options);
  if (palette) {
    palette.addItem({ command: id, category });
  }
}
