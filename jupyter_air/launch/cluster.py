"""``.distributed()`` on several nodes of a Ray cluster: ``@distributed(gpus=G, nodes=M)``.

The kernel is the Ray driver. The call's nodes are placed as a workload's are (the Ray backend:
a STRICT_SPREAD placement group, one ``NodeRunner`` actor per node); on each node the actor
runs the same launcher agent as on one machine (``python -m jupyter_air.launch.agent``, torch
elastic) with ``nnodes=M`` and the c10d rendezvous on node 0's address, so the ranks get
torchrun's environment everywhere (global ranks across nodes). The cloudpickled call travels
through Ray's object store — no shared filesystem. Each node's run folder is brought into the
kernel's as it changes (the ranks' output, results, error records, the agent's outcome), so
the single-node machinery applies unchanged: the call is one attempt of the supervision core
(backends/supervision.py) on the Ray backend, with output streamed into the cell, prefixed
``[node k rank r]``; results in global rank order; the first failing rank's own exception.
Interrupt, timeout and kernel death stop every node (the actors' keepers stop the commands if
the kernel dies); what is left is checked on every node.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..backends.base import GroupLaunch, NodeGroup, NodeLaunch
from ..backends.supervision import Outcome
from ..config import SYSTEM_METRICS_INTERVAL_S
from ..files import write_atomic
from ..logs.logfile import LogWriter
from ..tracking.identity import credentials_env
from .cluster_plan import ClusterPlan
from .devices import DevicePlan, say_once
from .driver import Launch
from .errors import DistributedError
from .kept_nodes import keep_seconds, kept_nodes
from .options import LaunchOptions
from .rundir import RunDir

if TYPE_CHECKING:
    from ..backends.ray_backend import RayBackend
    from ..backends.ray_group import RayGroup
    from ..workloads.checkpoints import CheckpointSync

SYNC_EVERY_S = 0.2


class NodeLostError(DistributedError):
    """A node of the call went away (its machine, its Ray node) before the call ended."""


class ClusterLaunch(Launch):
    """One ``.distributed()`` call on ``plan.nodes`` Ray nodes (see the module's docstring)."""

    def __init__(
        self,
        name: str,
        options: LaunchOptions,
        plan: ClusterPlan,
        payload: bytes,
        backend: RayBackend,
    ) -> None:
        total = plan.nodes * plan.nproc
        single = DevicePlan(total, plan.kind, None, plan.note)
        super().__init__(name, options, single, payload, backend)
        self.cluster = plan
        self.ray = backend
        self.ray_group: RayGroup | None = None
        self.offsets: list[dict[str, int]] = []
        self._origin: dict[int, int] = {}  # rank → the node its files came from
        self._synced = 0.0
        self._checkpoints: CheckpointSync | None = None  # the nodes' checkpoint folders

    @property
    def description(self) -> str:
        return self.cluster.description

    @property
    def samples_here(self) -> bool:
        return False  # each node samples itself, in its actor

    def _rank_node(self, rank: int) -> int | None:
        """The node a rank runs on (known from where its files came from)."""
        return self._origin.get(rank)

    def _where(self, rank: int) -> tuple[int, str] | None:
        node = self._rank_node(rank)
        if node is None:
            return None
        group = self.ray_group
        host = group.nodes[node].host if group is not None and node < len(group.nodes) else "?"
        return node, host

    # starting ----------------------------------------------------------------------------------
    def _settings(self) -> dict[str, Any]:
        settings = super()._settings()
        settings.update(nproc=self.cluster.nproc, nnodes=self.cluster.nodes, driver_pid=None)
        return settings

    def worker_env(self) -> dict[str, str]:
        """What the ranks get from the kernel on another machine: jupyter-air's part (the
        kernel's whole environment stays here: paths of this machine mean nothing there), the
        tracking server's token and user included."""
        env: dict[str, str] = {"PYTHONUNBUFFERED": "1"}
        if self.mlflow_run is not None:
            env.update(self.mlflow_run.env())
            token = os.environ.get("MLFLOW_TRACKING_TOKEN")
            if token:
                env["MLFLOW_TRACKING_TOKEN"] = token
            env.update(credentials_env())  # a team server's user, as MLflow's client reads it
        if self.cluster.nproc > 1:
            env["OMP_NUM_THREADS"] = "1"
        # the checkpoint folder: the node's own, which the backend sets (_node_checkpoints)
        return self._with_call_env(env)

    def _group_launch(self, run_dir: RunDir) -> GroupLaunch:
        """A node per Ray node; the call and the agent's settings travel through Ray's object
        store to a folder of each node's own."""
        import ray

        settings = json.dumps(self._settings()).encode()
        payload = ray.put(self.payload)  # once, for every node, through the object store
        self.writers = [
            LogWriter(run_dir.path / f"agent-node-{k}.log") for k in range(self.cluster.nodes)
        ]
        # the node's own interpreter (first on its PATH), not a path of this machine
        argv = ["python", "-m", "jupyter_air.launch.agent", "{folder}"]
        nodes = [
            NodeLaunch(
                node=k,
                argv=argv,
                env=self.worker_env(),
                cwd=os.getcwd(),
                writer=writer,
                files={"payload.pkl": payload, "launch.json": settings},
            )
            for k, writer in enumerate(self.writers)
        ]
        self.offsets = [{} for _ in nodes]
        return replace(
            self._shape(run_dir, nodes, self.cluster.nproc),
            relay_tracking=True,  # the embedded server, to nodes on other hosts
            snapshot_if_unseen=self._snapshot,
            checkpoints=self._node_checkpoints,
        )

    def _start_group(self, launch: GroupLaunch) -> NodeGroup:
        """The nodes a call of the same shape kept, or new ones."""
        from ..backends.ray_group import launch_shape

        return self.ray.start(launch, kept=kept_nodes().take(launch_shape(launch)))

    def started(self, attempt: int, group: NodeGroup) -> None:
        from ..backends.ray_group import RayGroup

        assert isinstance(group, RayGroup)
        self.group = self.ray_group = group
        if self.mlflow_run is not None:
            self._start_node_metrics()

    def _node_checkpoints(self, folders: dict[int, Any]) -> None:
        """Every node's checkpoint folder is on its node (its ``CHECKPOINT_DIR``): before the
        ranks start, the call's checkpoint (``node_0/`` of its folder here, with node k's own
        files on top) is put back in each; what the nodes write there comes home to
        ``node_K/`` while they run and when the call ends (``_checkpoints_home``), as a job
        run's does (workloads/checkpoints.py) — on nodes that share no disk with the kernel."""
        from ..workloads.checkpoints import CheckpointSync, Home

        assert self.checkpoint_dir is not None
        sync = CheckpointSync(Home(str(self.checkpoint_dir)))
        sync.run_id = self.mlflow_run.run_id if self.mlflow_run is not None else None
        try:
            sync.restore(1, folders)
        except Exception as error:  # the call goes on, as a job run's attempt does
            print(f"jupyter-air: the ranks start without the checkpoint: {error}", file=sys.stderr)
        self._checkpoints = sync.start()

    def _checkpoints_home(self, group: RayGroup) -> None:
        """The last of what the nodes saved, home; the nodes' folders removed."""
        sync, self._checkpoints = self._checkpoints, None
        if sync is None:
            return
        try:
            sync.finish()
        except Exception as error:  # the nodes' folders are kept
            print(f"jupyter-air: the checkpoint did not all come home: {error}", file=sys.stderr)
            return
        if sync.over:
            print(f"jupyter-air: {sync.over}", file=sys.stderr)
        else:
            with contextlib.suppress(Exception):
                group.forget_checkpoints()

    def _snapshot(self) -> str:
        """A snapshot of the kernel's folder (what a workload's would hold: git's files, the
        data folder left out, within its limits), for nodes that do not see it: the modules
        beside the notebook that the call imports travel with it."""
        from ..config import data_dir
        from ..workloads.snapshot import SnapshotRefused, copy_snapshot, list_snapshot

        assert self.run_dir is not None
        folder = os.getcwd()
        uri = self.mlflow_run.tracking_uri if self.mlflow_run is not None else "http"
        if not uri.startswith(("http://", "https://")):
            say_once(
                f"jupyter-air: the call's MLflow run is in {uri}, a store of this machine that "
                "nodes which do not see its folders cannot write to: what the ranks log there "
                "stays on their nodes. Set MLFLOW_TRACKING_URI to a tracking server (a Jupyter "
                "server gives its kernels its own) — docs/clusters.md."
            )
        try:
            listing = list_snapshot(folder, data=data_dir())
            return str(copy_snapshot(listing, self.run_dir.path / "code").path)
        except SnapshotRefused as error:
            raise DistributedError(
                f"{self.name}.distributed(): the nodes do not see this kernel's folder, and it "
                f"cannot be sent to them: {error}. List what the call does not need (data, "
                "checkpoints, environments) in an .airignore (or a .gitignore of a git "
                "repository), or run the kernel in a smaller folder."
            ) from None

    def _start_node_metrics(self) -> None:
        from ..backends.base import Metrics

        assert self.ray_group is not None and self.mlflow_run is not None
        env = {"MLFLOW_TRACKING_URI": self.mlflow_run.tracking_uri}
        token = os.environ.get("MLFLOW_TRACKING_TOKEN")
        if token:
            env["MLFLOW_TRACKING_TOKEN"] = token
        env.update(credentials_env())
        with contextlib.suppress(Exception):  # the call matters; its metrics are a nicety
            self.ray_group.start_metrics(
                Metrics(self.mlflow_run.run_id, env, SYSTEM_METRICS_INTERVAL_S.number())
            )

    # watching ----------------------------------------------------------------------------------
    def _sync(self, *, final: bool = False) -> None:
        """Bring every node's run folder into the kernel's (what changed since last time; a
        few times a second: each time asks every node)."""
        import ray

        group = self.ray_group
        run_dir = self.run_dir
        if group is None or run_dir is None:
            return
        now = time.monotonic()
        if not final and now - self._synced < SYNC_EVERY_S:
            return
        self._synced = now
        live = [k for k in range(len(group.actors)) if k not in group.lost]
        refs = {k: group.actors[k].read_files.remote(self.offsets[k]) for k in live}
        for k, ref in refs.items():
            try:
                changed = ray.get(ref, timeout=30)
            except Exception:
                continue  # a node gone: poll() says so
            for name, (data, size) in changed.items():
                self._store(k, name, data, size)

    def _store(self, node: int, name: str, data: bytes, size: int) -> None:
        run_dir = self.run_dir
        assert run_dir is not None
        if name in ("payload.pkl", "launch.json") or name.startswith("pid-"):
            return  # ours, or pids of another machine
        local = name
        if name == "outcome.json":
            local = f"outcome-node-{node}.json"
        elif name.startswith("stops-"):
            local = name.replace(".json", f"-node-{node}.json")
        if name.startswith("logs/rank-"):
            with contextlib.suppress(ValueError):
                self._origin.setdefault(int(name.split("/")[1].split("-")[1]), node)
        elif name.startswith(("result-", "error-")):
            with contextlib.suppress(ValueError):
                self._origin.setdefault(int(name.split("-")[1].split(".")[0]), node)
        target = run_dir.path / local
        target.parent.mkdir(parents=True, exist_ok=True)
        offsets = self.offsets[node]
        if name.endswith(".log"):  # the ranks' output: appended as it comes
            with open(target, "ab") as file:
                file.write(data)
            offsets[name] = offsets.get(name, 0) + len(data)
            return
        partial = target.with_name(target.name + ".part")  # whole files appear whole
        with open(partial, "ab") as file:
            file.write(data)
        offsets[name] = offsets.get(name, 0) + len(data)
        if offsets[name] >= size:
            if name in ("outcome.json",) or name.startswith("stops-"):
                offsets[name] = 0  # rewritten in place on the node: read again when it grows
            write_atomic(target, partial.read_bytes())
            partial.unlink()

    def _outcome(self) -> dict[str, Any] | None:
        """The agents' outcomes as one (each brought home when the nodes ended): succeeded when
        every node did."""
        run_dir = self.run_dir
        assert run_dir is not None
        outcomes = [
            run_dir.read_json(run_dir.path / f"outcome-node-{k}.json")
            for k in range(self.cluster.nodes)
        ]
        if all(o and o.get("state") == "succeeded" for o in outcomes):
            return {"state": "succeeded"}
        merged: dict[str, Any] = {"state": "failed", "failures": {}}
        for outcome in outcomes:
            if not outcome:
                continue
            merged["failures"].update(outcome.get("failures") or {})
            if outcome.get("state") in ("error", "stopped") and not merged["failures"]:
                merged.update({k: v for k, v in outcome.items() if k != "failures"})
        return merged

    def _some_rank_failed(self, group: NodeGroup) -> bool:
        run_dir = self.run_dir
        assert run_dir is not None
        if any(run_dir.error(rank).exists() for rank in range(self.plan.nproc)):
            return True
        return any(code != 0 for code in self.ray_group.codes.values()) if self.ray_group else False

    def _lost(self) -> str | None:
        group = self.ray_group
        return next(iter(group.lost.values()), None) if group is not None else None

    # stopping ----------------------------------------------------------------------------------
    def _unfinished(self) -> list[int]:
        run_dir = self.run_dir
        assert run_dir is not None
        return [
            r
            for r in range(self.plan.nproc)
            if not run_dir.result(r).exists() and not run_dir.error(r).exists()
        ]

    def _kill_ranks(self, group: NodeGroup) -> None:
        self._record_stops(self._unfinished())
        group.stop(0.0)

    def _finish(self, outcome: dict[str, Any] | None) -> list[Any]:
        __tracebackhide__ = True
        lost = self._lost()
        if lost is not None:
            self._error_text = lost
            unfinished = self._unfinished()
            raise NodeLostError(
                f"{self.name}.distributed(): {lost}; ranks {', '.join(map(str, unfinished))} "
                "did not finish and every other rank was stopped."
            )
        return super()._finish(outcome)

    def _release(self, group: NodeGroup, outcome: Outcome) -> None:
        """The checkpoints home; the nodes released — or kept for the next call when this one
        ended on its own (launch/kept_nodes.py)."""
        ray_group = self.ray_group
        if ray_group is None:
            group.close()
            return
        self._checkpoints_home(ray_group)
        with contextlib.suppress(Exception):
            ray_group.finish_metrics()
        supervisor = self.supervisor
        keep_s = keep_seconds(self.options.keep_nodes)
        reusable = (
            keep_s > 0
            and supervisor is not None
            and supervisor.stopped_in_s is None
            and supervisor.left == []
            and ray_group.reusable
        )
        try:
            ray_group.close(keep=reusable)
            if reusable:
                kept_nodes().keep(ray_group.placed, keep_s)
                say_once(
                    f"jupyter-air: the call's {self.cluster.nodes} Ray nodes are kept up "
                    f"to {keep_s:g} s for the next call of this shape, which then starts "
                    "at once (they make way for any job that waits for them); "
                    "keep_nodes=0 releases them at the end of each call "
                    "(docs/distributed.md)."
                )
        except Exception:
            with contextlib.suppress(Exception):
                ray_group.placed.release()

    def close(self) -> None:
        """The connection closed when nothing else uses it."""
        kept_nodes().done(self.ray)
