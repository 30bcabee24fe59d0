/**
 * The GPU part of the jupyter-air API (`GET air/api/gpu`, `POST air/api/gpu/refresh`,
 * `GET air/api/gpu/nodes`). The types are generated from the server's models
 * (`src/api/models.ts`, from `jupyter_air/telemetry/models.py`); these are the names the GPU
 * panel knows them by.
 *
 * Any metric may be `null` when the device cannot report it: the UI must show that as "n/a"
 * (and a hole in a chart), never 0. A field with a default may be left out (the history's
 * samples carry no processes, health or MIG readings): views read it with a fallback.
 */
import { IGpuPayload } from '../api/models';

export type {
  IClusterOverview,
  IDevice as IGpuDevice,
  IGpuHealth,
  IGpuPayload,
  IGpuProcess,
  IGpuReading,
  IGpuSummary,
  IHostReading,
  IKernelOwner,
  IMigDevice,
  IMigReading,
  INodeSummary,
  IRunOwner,
  ISample,
  IXidError
} from '../api/models';

/**
 * Whether a node reports: "stale" after 3 silent intervals, "lost" after `lost_after_s` (the
 * models name no type for it: it is the payloads' `state`).
 */
export type NodeState = IGpuPayload['state'];
