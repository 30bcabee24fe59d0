/**
 * The JupyterLab plugins of jupyter-air, one per module in src/plugins/, and the tokens of the
 * services they share (src/tokens.ts).
 */
import { JupyterFrontEndPlugin } from '@jupyterlab/application';

import { experimentsPlugin } from './plugins/experiments';
import { gpuPlugin } from './plugins/gpu';
import { kernelExtensionPlugin } from './plugins/kernel-extension';
import { liveWidgetPlugin } from './plugins/live-widget';
import { logsPlugin } from './plugins/logs';
import { mlflowStatusPlugin } from './plugins/mlflow-status';
import { mlflowTabPlugin } from './plugins/mlflow-tab';
import { runRendererPlugin } from './plugins/run-renderer';
import { workloadsPlugin } from './plugins/workloads';

export * from './tokens';

const plugins: JupyterFrontEndPlugin<any>[] = [
  mlflowStatusPlugin,
  gpuPlugin,
  kernelExtensionPlugin,
  liveWidgetPlugin,
  mlflowTabPlugin,
  runRendererPlugin,
  experimentsPlugin,
  workloadsPlugin,
  logsPlugin
];

export default plugins;
