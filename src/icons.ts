/**
 * The icons of jupyter-air (LabIcon: themed by JupyterLab's `jp-icon*` classes).
 */
import { LabIcon } from '@jupyterlab/ui-components';

import flaskSvgstr from '../style/icons/flask.svg';
import gpuSvgstr from '../style/icons/gpu.svg';
import logsSvgstr from '../style/icons/logs.svg';
import workloadsSvgstr from '../style/icons/workloads.svg';

/** A jupyter-air icon named `jupyter-air:<name>`. */
function airIcon(name: string, svgstr: string): LabIcon {
  return new LabIcon({ name: `jupyter-air:${name}`, svgstr });
}

/** A GPU chip: the GPU Resources side panel's tab. */
export const gpuIcon = airIcon('gpu', gpuSvgstr);

/** A lab flask: the Experiment panel's tab and the MLflow tab. */
export const experimentsIcon = airIcon('experiments', flaskSvgstr);

/** A list with a run arrow: the Workloads side panel's tab. */
export const workloadsIcon = airIcon('workloads', workloadsSvgstr);

/** A text page: the Logs tabs. */
export const logsIcon = airIcon('logs', logsSvgstr);
