/**
 * The JSON shapes of the GPU API (`GET air/api/gpu`, `POST air/api/gpu/refresh`,
 * `GET air/api/gpu/nodes`).
 *
 * They mirror the pydantic models of `jupyter_air/telemetry/models.py` and docs/api.md. Any
 * metric may be `null` when the device cannot report it: the UI must show that as "n/a" (and a
 * hole in a chart), never 0.
 */

/** Which telemetry source a node uses. */
export type GpuBackendKind = 'nvml' | 'simulated' | 'none';

/** Who reports a node: the Jupyter host itself, or a node agent. */
export type NodeSource = 'server' | 'agent';

/** Whether a node reports: "stale" after 3 silent intervals, "lost" after `lost_after_s`. */
export type NodeState = 'live' | 'stale' | 'lost';

/** The kernel (and notebook) that owns a GPU process. */
export interface IKernelOwner {
  kernel_id: string;
  kernel_name: string | null;
  /** Notebook path relative to the server root, when a session names one. */
  path: string | null;
}

/**
 * The jupyter-air MLflow run a GPU process works for (from its environment): MLflow UI link
 * `#/experiments/{experiment_id}/runs/{run_id}`; a workload's job page by `job_id`.
 */
export interface IRunOwner {
  run_id: string;
  experiment_id: string | null;
  /** RANK of a torch rank. */
  rank: number | null;
  local_rank: number | null;
  /** NODE_RANK of a workload node. */
  node_rank: number | null;
  /** The workload's job run. */
  job_id: string | null;
}

/** One process using a GPU (only in the latest sample). */
export interface IGpuProcess {
  pid: number;
  gpu_mem_mb: number | null;
  name: string | null;
  user: string | null;
  command: string | null;
  kernel: IKernelOwner | null;
  run?: IRunOwner | null;
}

/** An XID error the node's sampler saw. */
export interface IXidError {
  /** When it was seen, unix seconds. */
  t: number;
  xid: number;
}

/** A GPU health flag: what makes the GPU, not the code, suspect. */
export type GpuFlag =
  | 'ecc_uncorrected'
  | 'xid'
  | 'thermal_throttling'
  | 'hw_slowdown'
  | 'row_remap_failure';

/** Health of one GPU from NVML; `null` where the GPU does not report it. */
export interface IGpuHealth {
  sm_clock_mhz: number | null;
  sm_clock_max_mhz: number | null;
  mem_clock_mhz: number | null;
  mem_clock_max_mhz: number | null;
  /** Active clock-event reasons (`sw_power_cap`, `hw_thermal_slowdown`…). */
  throttle_reasons: string[] | null;
  fan_pct: number | null;
  /** Volatile ECC error counts (since the driver loaded). */
  ecc_corrected: number | null;
  ecc_uncorrected: number | null;
  retired_pages_sbe: number | null;
  retired_pages_dbe: number | null;
  retired_pages_pending: boolean | null;
  remapped_rows_correctable: number | null;
  remapped_rows_uncorrectable: number | null;
  row_remap_pending: boolean | null;
  row_remap_failure: boolean | null;
  /** Since the node's sampler started; `null`: XID events not supported. */
  xid_count: number | null;
  /** The most recent ones. */
  xid_errors: IXidError[];
  flags: (GpuFlag | string)[];
}

/** The memory of one MIG instance in a sample. */
export interface IMigReading {
  index: number;
  uuid: string | null;
  mem_used_mb: number | null;
  mem_total_mb: number | null;
}

/** One GPU's values: what a sample's reading and an overview row share. */
export interface IGpuValues {
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
  /** The latest sample only (the history leaves it out). */
  health?: IGpuHealth | null;
  /** MIG instances, the latest sample only. */
  mig?: IMigReading[];
}

/** One GPU's readings in a sample. */
export interface IGpuReading extends IGpuValues {
  /** The latest sample only. */
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
  /** Unix time in seconds (the sampling node's clock). */
  t: number;
  node: string;
  host: IHostReading;
  gpus: IGpuReading[];
}

/** Static description of a MIG instance. */
export interface IMigDevice {
  index: number;
  /** How CUDA_VISIBLE_DEVICES names it ("MIG-…"). */
  uuid: string | null;
  name: string | null;
  mem_total_mb: number | null;
}

/** Static description of a GPU. */
export interface IGpuDevice {
  index: number;
  name: string | null;
  uuid: string | null;
  mem_total_mb: number | null;
  power_limit_w: number | null;
  mig?: IMigDevice[];
}

/** A node as both the one-node payload and the overview describe it. */
export interface INodeStatus {
  node: string;
  source: NodeSource;
  state: NodeState;
  /** Server time (unix seconds) of the node's last report. */
  last_seen: number | null;
  /** The node's sampling interval. */
  interval_s: number;
  /** The node does not sample now (idle). */
  paused: boolean;
  held_by: string[];
  /** Last sampling error, in words. */
  error: string | null;
  /** `null` until an agent has described its node. */
  backend: GpuBackendKind | null;
  /** Why there is no GPU data, in words. */
  reason: string | null;
  driver_version: string | null;
}

/** The body of `GET air/api/gpu` and `POST air/api/gpu/refresh`. */
export interface IGpuPayload extends INodeStatus {
  devices: IGpuDevice[];
  history_s: number;
  idle_timeout_s: number;
  resumed: boolean;
  /** Server time (unix seconds) when the answer was built. */
  now: number;
  latest: ISample | null;
  /** Oldest first; with `since` only the samples newer than it. */
  samples: ISample[];
}

/** A GPU's row in the overview: its latest values, health and MIG instances, named. */
export interface IGpuSummary extends IGpuValues {
  name: string | null;
  uuid: string | null;
}

/** A node's row in the overview. */
export interface INodeSummary extends INodeStatus {
  /** `t` of its latest sample (the node's clock). */
  last_sample_t: number | null;
  host: IHostReading | null;
  gpus: IGpuSummary[];
}

/**
 * The body of `GET air/api/gpu/nodes`: every node, sorted by name. With `?since=<now of an
 * earlier answer>` `nodes` holds only the nodes that changed; `node_names` always lists all.
 */
export interface IClusterOverview {
  now: number;
  since: number | null;
  /** The Jupyter host's settings. */
  interval_s: number;
  idle_timeout_s: number;
  stale_after_intervals: number;
  lost_after_s: number;
  paused: boolean;
  resumed: boolean;
  node_names: string[];
  nodes: INodeSummary[];
}
