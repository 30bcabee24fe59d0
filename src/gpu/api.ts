/**
 * The GPU call of the jupyter-air API, through `requestAPI` (base URL, token, XSRF): the history
 * (`GET air/api/gpu`, `?since=` for what is newer) or a sample taken now (`POST gpu/refresh`).
 */
import { requestAPI } from '../api';
import { IGpuPayload } from './types';

/** Options of one GPU API call. */
export interface IGpuFetchOptions {
  /** Only samples newer than this (unix seconds); `null` for the whole window. */
  since: number | null;
  /** `true`: `POST gpu/refresh` (sample now); `false`: `GET gpu`. */
  refresh: boolean;
}

/** A function that calls the GPU API (injectable for tests). */
export type GpuFetcher = (options: IGpuFetchOptions) => Promise<IGpuPayload>;

/** The real GPU API: `GET air/api/gpu` or `POST air/api/gpu/refresh`. */
export const fetchGpu: GpuFetcher = ({ since, refresh }) => {
  const query = since === null ? '' : `?since=${encodeURIComponent(since)}`;
  return requestAPI<IGpuPayload>((refresh ? 'gpu/refresh' : 'gpu') + query, {
    method: refresh ? 'POST' : 'GET'
  });
};
