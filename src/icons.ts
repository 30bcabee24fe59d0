/**
 * The icons of jupyter-air (LabIcon: themed by JupyterLab's `jp-icon*` classes).
 */
import { LabIcon } from '@jupyterlab/ui-components';

import flaskSvgstr from '../style/icons/flask.svg';
import gpuSvgstr from '../style/icons/gpu.svg';
import logsSvgstr from '../style/icons/logs.svg';
import workloadsSvgstr from '../style/icons/workloads.svg';

/** A GPU chip: the GPU Resources side panel's tab. */
export const gpuIcon = new LabIcon({
  name: 'jupyter-air:gpu',
  svgstr: gpuSvgstr
});

/** A lab flask: the Experiment panel's tab and the MLflow tab. */
export const experimentsIcon = new LabIcon({
  name: 'jupyter-air:experiments',
  svgstr: flaskSvgstr
});

/** A list with a run arrow: the Workloads side panel's tab. */
export const workloadsIcon = new LabIcon({
  name: 'jupyter-air:workloads',
  svgstr: workloadsSvgstr
});

/** A text page: the Logs tabs. */
export const logsIcon = new LabIcon({
  name: 'jupyter-air:logs',
  svgstr: logsSvgstr
});
