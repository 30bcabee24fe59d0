import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-air:plugin',
  description: 'GPU Resources for JupyterLab',
  autoStart: true,
  activate: (app: JupyterFrontEnd) => {
    console.log('jupyter-air activated');
  }
};

export default plugin;
