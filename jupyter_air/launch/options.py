"""What ``@distributed(...)`` was given, as one value: the decorator builds it, and whatever
runs the call (on this machine, on Ray nodes, as a job run) reads it, so it sits below them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LaunchOptions:
    """What ``@distributed(...)`` was given (see decorator.distributed). The options are declared
    here: the decorator's signature and help name each one with the same default (a test holds
    them to it), and ``decorator._checked`` checks them."""

    gpus: int | None = None
    nodes: int = 1
    timeout: float | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    output: str = "all"
    run_name: str | None = None
    experiment: str | None = None
    mlflow: bool = True
    grace_period: float = 5.0
    remote: bool = False  # a job run (launch/remote.py) instead of processes of the kernel
    max_retries: int = 0  # remote: attempts after the first
    max_restarts: int = 0  # torch elastic restarts every rank this often after a rank fails
    keep_nodes: float | None = None  # nodes > 1: seconds a clean call's nodes are kept
    resume: bool | str = False  # continue the function's last call (True) or this MLflow run
