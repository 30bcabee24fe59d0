"""Which backend runs a workload, in this order:

1. ``compute.backend: local | ray`` in the workload's YAML;
2. the Jupyter server's ``c.JupyterAir.cluster`` (given to kernels and terminals as
   ``config.CLUSTER``), or ``config.CLUSTER`` in a shell: ``ray`` (the cluster of
   ``RAY_ADDRESS``, or Ray's own discovery) or the head's GCS address (``10.0.0.5:6379``; a
   Ray Client address, ``ray://``, is refused when connecting: ray_backend.refuse_ray_client);
3. ``ray`` when ``RAY_ADDRESS`` is set;
4. ``local``.

The choice and the address are recorded with the job run, so every attempt (a retry at 3 am
included) runs where the submission said, and ``air get run`` says where that was.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from ..config import CLUSTER
from .base import Backend

CLUSTER_ENV = CLUSTER.name
BACKENDS = ("local", "ray")


@dataclass(frozen=True)
class Choice:
    backend: str  # "local" | "ray"
    address: str | None  # the Ray cluster's address (None: RAY_ADDRESS or Ray's discovery)
    why: str  # for people: "compute.backend", "config.CLUSTER", "RAY_ADDRESS", "default"


def choose(spec_backend: str | None, environ: Mapping[str, str] | None = None) -> Choice:
    env = os.environ if environ is None else environ
    cluster = (env.get(CLUSTER_ENV) or "").strip()
    ray_address = (env.get("RAY_ADDRESS") or "").strip() or None
    cluster_address = cluster if cluster and cluster.lower() not in ("ray", "local") else None
    address = cluster_address or ray_address
    if spec_backend:
        return Choice(spec_backend, address if spec_backend == "ray" else None, "compute.backend")
    if cluster:
        if cluster.lower() == "local":
            return Choice("local", None, CLUSTER_ENV)
        return Choice("ray", address, CLUSTER_ENV)
    if ray_address:
        return Choice("ray", ray_address, "RAY_ADDRESS")
    return Choice("local", None, "default")


def backend_for(
    name: str | None, address: str | None = None, *, environ: Mapping[str, str] | None = None
) -> Backend:
    """The backend of that name (``None``: local, for job runs of earlier releases)."""
    if name in (None, "local"):
        from .local import LocalBackend

        return LocalBackend(environ)
    if name == "ray":
        from .ray_backend import RayBackend

        return RayBackend(address)
    raise ValueError(f"unknown backend {name!r} (one of {', '.join(BACKENDS)})")


RAY_MISSING = (
    "This workload runs on Ray ({why}), which is not installed here: pip install "
    '"jupyter-air[ray]" (the same Ray version as the cluster), or set compute.backend: local.'
)


def require_ray(why: str) -> None:
    """Say how to install Ray when a workload needs it and it is missing."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise ModuleNotFoundError(RAY_MISSING.format(why=why))
