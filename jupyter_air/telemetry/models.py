"""The typed contract of GPU telemetry: every payload the GPU API serves or takes, as pydantic
models — samples and their health, process → run attribution, a node's history, the cluster
overview, and the agents' ingest request and response.

Pure pydantic, no Jupyter imports: node agents build these and the server validates them
(``model_validate``) and serves them (``model_dump(mode="json")``); JSON Schema, and from it the
panel's TypeScript types, come from these classes. A metric a GPU does not report is ``null``,
never 0. Everything a sender can make large has a limit, so a malformed or hostile payload is a
400, not memory. The sampler's hot path keeps the same shapes as plain dicts (``samples.py``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_GPUS = 64  # per node
MAX_MIG = 16  # MIG instances per GPU
MAX_PROCESSES = 256  # per GPU
MAX_SAMPLES = 360  # per ingest request: an hour of samples kept while the server was away
MAX_HOLDS = 64
MAX_XID_KEPT = 64
MAX_FLAGS = 16
NODE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"

NodeName = Annotated[str, Field(pattern=NODE_PATTERN)]
Text = Annotated[str, Field(max_length=1024)]
Id = Annotated[str, Field(max_length=256)]
Percent = Annotated[float, Field(ge=0, le=100)]
Amount = Annotated[float, Field(ge=0)]  # MiB, watts, degrees
Count = Annotated[int, Field(ge=0)]
Backend = Literal["nvml", "simulated", "none"]
Source = Literal["server", "agent"]
NodeState = Literal["live", "stale", "lost"]


class Model(BaseModel):
    """Finite numbers only (the history is strict JSON); unknown fields are dropped."""

    model_config = ConfigDict(allow_inf_nan=False, extra="ignore")


# samples --------------------------------------------------------------------------------------
class KernelOwner(Model):
    """The Jupyter kernel (and notebook) a GPU process belongs to."""

    kernel_id: Id
    kernel_name: Id | None = None
    path: Text | None = None  # notebook path relative to the server root


class RunOwner(Model):
    """The MLflow run a GPU process works for: link ``#/experiments/{experiment_id}/runs/{run_id}``
    in the MLflow UI; a workload's job page by ``job_id``."""

    run_id: Id
    experiment_id: Id | None = None
    rank: Count | None = None  # RANK of a torch rank
    local_rank: Count | None = None
    node_rank: Count | None = None  # NODE_RANK of a workload node
    job_id: Id | None = None  # config.JOB_ID


class GpuProcess(Model):
    pid: Count
    gpu_mem_mb: Amount | None = None
    name: Text | None = None  # None when the pid is not visible here (container)
    user: Text | None = None
    command: Text | None = None
    kernel: KernelOwner | None = None
    run: RunOwner | None = None


class XidError(Model):
    t: float  # when the sampler saw it, unix seconds
    xid: Count


class GpuHealth(Model):
    """Health of one GPU from NVML; ``null`` where the GPU does not report it."""

    sm_clock_mhz: Count | None = None
    sm_clock_max_mhz: Count | None = None
    mem_clock_mhz: Count | None = None
    mem_clock_max_mhz: Count | None = None
    throttle_reasons: Annotated[list[Id], Field(max_length=32)] | None = None
    fan_pct: Amount | None = None
    ecc_corrected: Count | None = None  # volatile: since the driver loaded
    ecc_uncorrected: Count | None = None
    retired_pages_sbe: Count | None = None
    retired_pages_dbe: Count | None = None
    retired_pages_pending: bool | None = None
    remapped_rows_correctable: Count | None = None
    remapped_rows_uncorrectable: Count | None = None
    row_remap_pending: bool | None = None
    row_remap_failure: bool | None = None
    xid_count: Count | None = None  # since the sampler started; null: events not supported
    xid_errors: Annotated[list[XidError], Field(max_length=MAX_XID_KEPT)] = []
    # ecc_uncorrected, xid, thermal_throttling, hw_slowdown, row_remap_failure
    flags: Annotated[list[Id], Field(max_length=MAX_FLAGS)] = []


class MigReading(Model):
    index: Count  # MIG device index on its GPU
    uuid: Id | None = None
    mem_used_mb: Amount | None = None
    mem_total_mb: Amount | None = None


class GpuValues(Model):
    """A GPU's values: what a sample's reading and an overview row share."""

    index: Annotated[int, Field(ge=0, lt=MAX_GPUS)]
    util_pct: Percent | None = None
    mem_util_pct: Percent | None = None
    mem_used_mb: Amount | None = None
    mem_total_mb: Amount | None = None
    temp_c: float | None = None
    power_w: Amount | None = None
    power_limit_w: Amount | None = None
    lost: bool = False
    # the latest sample only; the history leaves these out
    health: GpuHealth | None = None
    mig: Annotated[list[MigReading], Field(max_length=MAX_MIG)] = []


class GpuReading(GpuValues):
    processes: Annotated[list[GpuProcess], Field(max_length=MAX_PROCESSES)] = []  # latest only


class HostReading(Model):
    cpu_pct: Percent | None = None
    mem_used_mb: Amount | None = None
    mem_total_mb: Amount | None = None


class Sample(Model):
    t: float  # unix seconds, the sampling node's clock
    node: NodeName
    host: HostReading
    gpus: Annotated[list[GpuReading], Field(max_length=MAX_GPUS)] = []


# devices --------------------------------------------------------------------------------------
class MigDevice(Model):
    index: Count
    uuid: Id | None = None  # how CUDA_VISIBLE_DEVICES names it ("MIG-…")
    name: Text | None = None
    mem_total_mb: Amount | None = None


class Device(Model):
    index: Annotated[int, Field(ge=0, lt=MAX_GPUS)]
    name: Text | None = None
    uuid: Id | None = None
    mem_total_mb: Amount | None = None
    power_limit_w: Amount | None = None
    mig: Annotated[list[MigDevice], Field(max_length=MAX_MIG)] = []


class NodeInfo(Model):
    """What reads a node's GPUs: backend, the reason when there is no GPU data, the devices."""

    node: NodeName
    backend: Backend
    reason: Text | None = None
    devices: Annotated[list[Device], Field(max_length=MAX_GPUS)] = []
    driver_version: Id | None = None


# GET air/api/gpu and GET air/api/gpu/nodes ---------------------------------------------------
class NodeStatus(Model):
    """A node as both the one-node payload and the overview describe it."""

    node: NodeName
    source: Source  # "server": the Jupyter host itself; "agent": a node agent reports it
    state: NodeState  # "stale" after 3 intervals without a report, "lost" after lost_after_s
    last_seen: float | None = None  # server time of the node's last report (or sample)
    interval_s: float  # the node's sampling interval
    paused: bool  # the node does not sample now (idle)
    held_by: list[Text] = []  # runs that keep the node sampling
    error: Text | None = None  # last sampling error
    backend: Backend | None = None  # null until an agent has described its node
    reason: Text | None = None  # why there is no GPU data, in words
    driver_version: Id | None = None


class GpuPayload(NodeStatus):
    """One node: its devices, sampling state, latest sample (with processes and health) and
    history (``samples``, oldest first, without processes, health and MIG readings)."""

    devices: list[Device] = []
    history_s: float
    idle_timeout_s: float
    resumed: bool  # this request woke sampling
    now: float  # server time
    latest: Sample | None = None
    samples: list[Sample] = []


class GpuSummary(GpuValues):
    """A GPU's row in the overview: its latest values, health and MIG instances, named."""

    name: Text | None = None
    uuid: Id | None = None


class NodeSummary(NodeStatus):
    """A node's row in the overview."""

    last_sample_t: float | None = None  # t of the latest sample
    host: HostReading | None = None
    gpus: list[GpuSummary] = []


class ClusterOverview(Model):
    """Every node with its GPUs' latest values and health, sorted by node name. With
    ``?since=<now of an earlier answer>`` only nodes that changed since then are in ``nodes``;
    ``node_names`` always lists them all."""

    now: float
    since: float | None = None
    interval_s: float  # the Jupyter host's
    idle_timeout_s: float
    stale_after_intervals: int
    lost_after_s: float
    paused: bool  # no panel asked within the idle timeout: nodes sample only when held
    resumed: bool
    node_names: list[NodeName]
    nodes: list[NodeSummary]


# POST air/api/telemetry/ingest ----------------------------------------------------------------
class AgentInfo(Model):
    version: Id
    interval_s: Annotated[float, Field(ge=0.05, le=3600)]
    started: float  # unix seconds


class IngestRequest(Model):
    """A node agent's report: its samples since the last accepted report (none while idle:
    then it is a heartbeat), what holds it awake, and its devices when they are news."""

    node: NodeName
    agent: AgentInfo
    sampling: bool  # the agent samples now
    holds: Annotated[list[Text], Field(max_length=MAX_HOLDS)] = []
    error: Text | None = None
    info: NodeInfo | None = None
    samples: Annotated[list[Sample], Field(max_length=MAX_SAMPLES)] = []

    @model_validator(mode="after")
    def _one_node(self) -> IngestRequest:
        for where, node in [("info", self.info.node if self.info else self.node)] + [
            (f"samples.{i}", s.node) for i, s in enumerate(self.samples)
        ]:
            if node != self.node:
                raise ValueError(f"{where}.node is {node!r}, but the report is for {self.node!r}")
        return self


class IngestResponse(Model):
    """What the server tells an agent: sample or not (the idle rule), and when to report next."""

    sample: bool  # false: no panel is watching and nothing asks; heartbeat only, no NVML
    next_s: float  # seconds until the next report
    accepted: int  # samples stored from this report
    have_info: bool  # false: send ``info`` with the next report
    idle_timeout_s: float


PAYLOADS = (GpuPayload, ClusterOverview, IngestRequest, IngestResponse)
