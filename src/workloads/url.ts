/**
 * The job run named in the page's URL: `<base>lab?air-workload=<id>` (the link `air run` prints)
 * opens that job run's page when JupyterLab starts.
 */

/** The URL query parameter. */
export const WORKLOAD_URL_PARAM = 'air-workload';

/** The job run id in a query string (`?air-workload=3f2a9c1b0d4e`), `null` when none or invalid. */
export function workloadFromSearch(search: string): string | null {
  let value: string | null;
  try {
    value = new URLSearchParams(search).get(WORKLOAD_URL_PARAM);
  } catch {
    return null;
  }
  const id = (value ?? '').trim();
  // job ids are hexadecimal (12 digits; a unique prefix of 4 or more is accepted too)
  return /^[0-9a-f]{4,64}$/i.test(id) ? id.toLowerCase() : null;
}
