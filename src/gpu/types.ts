/**
 * The JSON shapes of the GPU API (`GET air/api/gpu`, `POST air/api/gpu/refresh`).
 *
 * They mirror `jupyter_air/telemetry/samples.py` and docs/api.md. Any metric may be `null` when
 * the device cannot report it: the UI must show that as "n/a" (and a hole in a chart), never 0.
 */

/** Which telemetry source the server uses. */
export type GpuBackendKind = 'nvml' | 'simulated' | 'none';

/** The kernel (and notebook) that owns a GPU process. */
export interface IKernelOwner {
  kernel_id: string;
  kernel_name: string | null;
  /** Notebook path relative to the server root, when a session names one. */
  path: string | null;
}

/** One process using a GPU (only in the latest sample). */
export interface IGpuProcess {
  pid: number;
  gpu_mem_mb: number | null;
  name: string | null;
  user: string | null;
  command: string | null;
  kernel: IKernelOwner | null;
}

/** One GPU's readings in a sample. */
export interface IGpuReading {
  index: number;
  util_pct: number | null;
  mem_util_pct: number | null;
  mem_used_mb: number | null;
  mem_total_mb: number | null;
  temp_c: number | null;
  power_w: number | null;
  power_limit_w: number | null;
  /** The GPU stopped answering; its metrics are null. */
  lost: boolean;
  processes?: IGpuProcess[];
}

/** The host's readings in a sample. */
export interface IHostReading {
  cpu_pct: number | null;
  mem_used_mb: number | null;
  mem_total_mb: number | null;
}

/** One telemetry sample. */
export interface ISample {
  /** Unix time in seconds. */
  t: number;
  node: string;
  host: IHostReading;
  gpus: IGpuReading[];
}

/** Static description of a GPU. */
export interface IGpuDevice {
  index: number;
  name: string | null;
  uuid: string | null;
  mem_total_mb: number | null;
  power_limit_w: number | null;
}

/** The body of `GET air/api/gpu` and `POST air/api/gpu/refresh`. */
export interface IGpuPayload {
  backend: GpuBackendKind;
  /** For backend "none": why there is no GPU data, in words. */
  reason: string | null;
  devices: IGpuDevice[];
  node: string;
  driver_version: string | null;
  interval_s: number;
  history_s: number;
  idle_timeout_s: number;
  paused: boolean;
  resumed: boolean;
  held_by: string[];
  error: string | null;
  /** Server time (unix seconds) when the answer was built. */
  now: number;
  latest: ISample | null;
  /** Oldest first; with `since` only the samples newer than it. */
  samples: ISample[];
}
