"""The GPU payloads of the REST API (``air/api/gpu``, ``air/api/gpu/refresh``,
``air/api/gpu/nodes``, ``air/api/telemetry/ingest``): the telemetry models, which node agents
build too, so they live with the sampler (``telemetry/models.py``, no Jupyter imports)."""

from __future__ import annotations

from ..telemetry.models import (
    AgentInfo,
    ClusterOverview,
    Device,
    GpuHealth,
    GpuPayload,
    GpuProcess,
    GpuReading,
    GpuSummary,
    HostReading,
    IngestRequest,
    IngestResponse,
    KernelOwner,
    MigDevice,
    MigReading,
    NodeInfo,
    NodeSummary,
    RunOwner,
    Sample,
    XidError,
)

__all__ = [
    "AgentInfo",
    "ClusterOverview",
    "Device",
    "GpuHealth",
    "GpuPayload",
    "GpuProcess",
    "GpuReading",
    "GpuSummary",
    "HostReading",
    "IngestRequest",
    "IngestResponse",
    "KernelOwner",
    "MigDevice",
    "MigReading",
    "NodeInfo",
    "NodeSummary",
    "RunOwner",
    "Sample",
    "XidError",
]
