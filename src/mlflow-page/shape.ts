/**
 * What the Logs tab relies on in the MLflow UI's run page (MLflow 3.7 to 3.17): the hash routes
 * of a run page and the shape of its tab list. tests/test_mlflow_run_page_pin.py reads these
 * values and checks them against the installed MLflow's bundled UI, so an MLflow that changes
 * them fails a test (and the page falls back to a "Logs" link meanwhile).
 */

/** The run page's routes as MLflow's router declares them (its bundled JS holds these strings). */
export const RUN_PAGE_ROUTES: readonly string[] = [
  '/experiments/:experimentId/runs/:runUuid',
  '/experiments/:experimentId/evaluation-runs/:runUuid',
  '/runs/:runUuid'
];

/** `data-component-id` of the run page's tab list (Overview, Model metrics, …, Artifacts). */
export const TABLIST_COMPONENT_ID = 'mlflow.run-page.view-mode-switch';

/** The tab list: `role="tablist"` with `role="tab"` buttons (Radix tabs, `data-state`). */
export const TABLIST_SELECTOR = `[role="tablist"][data-component-id="${TABLIST_COMPONENT_ID}"]`;

/** Tab labels by which a run page's tab list of another shape is still recognised. */
export const RUN_PAGE_TAB_LABELS: readonly string[] = ['Overview', 'Artifacts'];
