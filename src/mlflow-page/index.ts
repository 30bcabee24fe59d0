/**
 * The script the Jupyter server's MLflow proxy adds to MLflow's pages
 * (`<script src="<base_url>air/static/mlflow-page.js" data-base-url="<base_url>" defer>`): the
 * Logs tab on the run pages of job-backed runs (page.ts). Bundled on its own into
 * `jupyter_air/static/mlflow-page.js` (scripts/build-mlflow-page.mjs).
 */
import { pageBaseUrl } from './client';
import { RunPageLogs } from './page';

/** Where the page keeps the one instance (a second load of the script does nothing). */
const holder = window as unknown as { jupyterAirMlflowPage?: RunPageLogs };

function main(): void {
  if (holder.jupyterAirMlflowPage !== undefined) {
    return; // loaded twice
  }
  const logs = new RunPageLogs({
    baseUrl: pageBaseUrl(document.currentScript, window.location.pathname)
  });
  holder.jupyterAirMlflowPage = logs;
  const start = () => {
    try {
      logs.start();
    } catch (error) {
      console.warn('jupyter-air: the Logs tab', error);
    }
  };
  if (document.body) {
    start();
  } else {
    document.addEventListener('DOMContentLoaded', start, { once: true });
  }
}

try {
  main();
} catch (error) {
  console.warn('jupyter-air: the Logs tab', error);
}
