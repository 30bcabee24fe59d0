"""Where one ``.distributed()`` call runs: as a job run (``remote=True``, launch/remote.py), on
several Ray nodes (``nodes > 1``, launch/cluster.py) or on this machine (launch/driver.py). The
payload is built before anything is created, so an unpicklable argument fails first.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from .cluster import ClusterLaunch
from .cluster_plan import cluster_backend, plan_cluster
from .devices import plan_devices, say_once
from .driver import Launch
from .errors import TorchNotInstalledError
from .kept_nodes import kept_nodes
from .options import LaunchOptions
from .payload import build_payload, function_name
from .remote import run_remote


def run_distributed(
    fn: Callable[..., Any], options: LaunchOptions, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> list[Any]:
    __tracebackhide__ = True
    if options.remote:
        payload = build_payload(fn, args, kwargs)  # before anything is created
        return run_remote(function_name(fn), options, payload.dumps(), options.max_retries)
    require_torch()
    if options.nodes > 1:
        backend = cluster_backend(options.nodes)
        try:
            cluster = plan_cluster(options.gpus, options.nodes, backend)
            payload = build_payload(fn, args, kwargs)  # before anything starts
        except BaseException:
            kept_nodes().done(backend)
            raise
        say_once(cluster.note)
        return ClusterLaunch(function_name(fn), options, cluster, payload.dumps(), backend).run()
    plan = plan_devices(options.gpus, options.nodes)
    payload = build_payload(fn, args, kwargs)  # before anything starts
    say_once(plan.note)
    return Launch(function_name(fn), options, plan, payload.dumps()).run()


def require_torch() -> None:
    try:
        found = importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise TorchNotInstalledError(
            ".distributed() runs the ranks with torch (torch.distributed elastic), which is not "
            "installed in this kernel's environment. Install it with: pip install \"jupyter-air"
            '[torch]" (or pip install torch), then restart the kernel.'
        )
