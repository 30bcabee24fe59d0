/**
 * The GPU calls of the jupyter-air API, through `requestAPI` (base URL, token, XSRF): one node's
 * history (`GET air/api/gpu`, `?since=` for what is newer, `?node=` for another node than the
 * Jupyter host), a sample taken now (`POST gpu/refresh`), and the cluster overview
 * (`GET air/api/gpu/nodes`, `?since=` for the nodes that changed).
 */
import { requestAPI } from '../api';
import { IClusterOverview, IGpuPayload } from './types';

/** Options of one GPU API call. */
export interface IGpuFetchOptions {
  /** Only samples newer than this (unix seconds); `null` for the whole window. */
  since: number | null;
  /** `true`: `POST gpu/refresh` (sample now); `false`: `GET gpu`. */
  refresh: boolean;
  /** The node; `null` (or absent) for the Jupyter host's own. */
  node?: string | null;
}

/** A function that calls the GPU API (injectable for tests). */
export type GpuFetcher = (options: IGpuFetchOptions) => Promise<IGpuPayload>;

/**
 * A function that asks for the cluster overview; `since`: the `now` of an earlier answer (only
 * the nodes that changed since), `null` for every node.
 */
export type OverviewFetcher = (
  since: number | null
) => Promise<IClusterOverview>;

/** A query string from the parameters that are set (`''` when none is). */
function query(params: Record<string, string | number | null | undefined>) {
  const parts: string[] = [];
  for (const [name, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== '') {
      parts.push(`${name}=${encodeURIComponent(value)}`);
    }
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/** The real GPU API: `GET air/api/gpu` or `POST air/api/gpu/refresh`. */
export const fetchGpu: GpuFetcher = ({ since, refresh, node }) =>
  requestAPI<IGpuPayload>(
    (refresh ? 'gpu/refresh' : 'gpu') + query({ since, node }),
    { method: refresh ? 'POST' : 'GET' }
  );

/** The real overview: `GET air/api/gpu/nodes`. */
export const fetchOverview: OverviewFetcher = since =>
  requestAPI<IClusterOverview>('gpu/nodes' + query({ since }), {
    method: 'GET'
  });
