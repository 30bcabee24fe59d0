/**
 * The job run named in the page's URL: `<base>lab?air-workload=<id>` (the link `air run` prints)
 * opens that job run's page when JupyterLab starts.
 */

/** The URL query parameter. */
export const WORKLOAD_URL_PARAM = 'air-workload';

/** A job run id (or a unique prefix of one), normalised; `null` when it cannot be one. */
export function jobId(value: string | null | undefined): string | null {
  const id = (value ?? '').trim();
  // job ids are hexadecimal (12 digits; a unique prefix of 4 or more is accepted too)
  return /^[0-9a-f]{4,64}$/i.test(id) ? id.toLowerCase() : null;
}

/** The job run id in a query string (`?air-workload=3f2a9c1b0d4e`), `null` when none or invalid. */
export function workloadFromSearch(search: string): string | null {
  let value: string | null;
  try {
    value = new URLSearchParams(search).get(WORKLOAD_URL_PARAM);
  } catch {
    return null;
  }
  return jobId(value);
}

/**
 * The JupyterLab page that opens a job run's page (`<base>lab?air-workload=<id>`, what `air run`
 * prints); `null` for an id that cannot be a job run's.
 */
export function workloadUrl(id: string, baseUrl: string): string | null {
  const job = jobId(id);
  if (job === null) {
    return null;
  }
  const base = baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`;
  return `${base}lab?${WORKLOAD_URL_PARAM}=${job}`;
}
