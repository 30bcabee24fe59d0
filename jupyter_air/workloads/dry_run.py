"""``air run --dry-run``: every check ``jobs.submit`` makes — the spec, where it runs (GPUs or
the Ray cluster's shape), the tracking server, the experiment and its artifact location — and
what the job run would use, without creating anything: no job run, no job folder, no
experiment, no MLflow server started."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .capacity import GpuInventory
from .connection import find_connection
from .jobs import code_listing, place

if TYPE_CHECKING:
    from .spec import WorkloadSpec


@dataclass
class Plan:
    """What a submission of the workload would use."""

    spec: dict[str, Any]
    backend: str
    cluster: str | None
    gpus: list[list[int]]  # per node, the GPU indices it would get (local backend)
    tracking_uri: str | None  # None: the data folder's own server, not running yet
    tracking: str  # "embedded" (the data folder's own server) or "external"
    tracking_server: str  # "reachable" or "would be started"
    experiment_name: str
    experiment_id: str | None  # None: the experiment would be created
    artifact_location: str | None  # the experiment's, or the one it would be created with
    code: dict[str, Any] | None = None  # what would be snapshotted (snapshot.CodeRecord)
    overrides: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {"dry_run": True, **asdict(self)}


def dry_run(
    spec: WorkloadSpec,
    *,
    data: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    inventory: GpuInventory | None = None,
) -> Plan:
    """Check the workload as ``submit`` would and say what it would use. Raises what
    ``submit`` raises (SpecError, CapacityError, NoTrackingServer, ExperimentError, an MLflow
    error), having created and started nothing."""
    from ..backends.choice import choose

    choice = choose(spec.compute.backend, environ)
    gpus, ray, _pool = place(spec, choice, inventory)
    try:
        code = _code(spec, data)
        connection = find_connection(require_tracking=False, start_embedded=False, data=data)
        if connection is not None and ray is not None:
            ray.check_reachable(connection.tracking_uri, embedded=connection.embedded)
    finally:
        if ray is not None:
            ray.close()
    plan = Plan(
        spec=spec.model_dump(mode="json"),
        backend=choice.backend,
        cluster=choice.address,
        gpus=[[g.index for g in node] for node in gpus],
        tracking_uri=None,
        tracking="embedded",
        tracking_server="would be started",
        experiment_name=spec.experiment_name,
        experiment_id=None,
        artifact_location=spec.mlflow_artifact_location,
        code=code,
    )
    if connection is None:  # submit would start the data folder's own server: a new store
        return plan
    try:
        from ..tracking.experiments import check_experiment
        from ..tracking.rest import client_for

        if connection.token:
            connection.activate()
        client = client_for(connection.tracking_uri)
        experiment = check_experiment(
            spec.experiment_name, artifact_location=spec.mlflow_artifact_location, client=client
        )
    finally:
        if connection.lease is not None:
            connection.lease.release()
            connection.lease = None
    plan.tracking_uri = connection.tracking_uri
    plan.tracking = "embedded" if connection.embedded else "external"
    plan.tracking_server = "reachable"
    if experiment is not None:
        plan.experiment_id = str(experiment.experiment_id)
        plan.artifact_location = experiment.artifact_location
    return plan


def _code(spec: WorkloadSpec, data: str | os.PathLike[str] | None) -> dict[str, Any]:
    """What the submission would snapshot (files, bytes, git), nothing copied."""
    from .snapshot import SNAPSHOT, CodeRecord, live_record

    working = spec.working_dir or os.getcwd()
    listing = code_listing(spec, data)
    if listing is None:
        return live_record(working).to_dict()
    git = listing.git
    return CodeRecord(
        source=SNAPSHOT,
        folder=working,
        files=len(listing.paths),
        bytes=listing.bytes,
        git_commit=git.commit if git else None,
        git_dirty=git.dirty if git else None,
        git=git is not None,
    ).to_dict()
