"""One attempt on Ray nodes, once placed: its commands started on every node (the code snapshot
sent where it is missing, the embedded MLflow server relayed to nodes on other hosts), then
watched tick by tick (exit codes, new log lines, a node lost), its folders brought home, its
metrics, and its stop; ``Placed`` is what a caller may keep for the next attempt of the same
shape. ``ray_backend.py`` places the nodes and says how this is watched.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import CHECKPOINT_DIR, RAY_LOST_S
from .base import GroupLaunch, Metrics, NodeInfo, NodeState
from .ray_runners import Runners, kill_runner

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 10.0
SIGNAL_CONFIRM_S = 5.0


def launch_shape(launch: GroupLaunch) -> tuple[int, int, bool]:
    """What a placement fits: the node count and each node's bundle."""
    return launch.num_nodes, launch.accelerators, launch.uses_gpus


@dataclass
class Placed:
    """An attempt's placement group and its nodes' runners, one per bundle: each bundle's Ray
    node and GPUs, and where the runners go when released cleanly (ray_runners.py)."""

    placement: Any
    actors: list[Any]
    shape: tuple[int, int, bool]
    machines: list[str]  # each bundle's Ray node id
    gpus: list[str]  # the GPUs each bundle holds ("0,1")
    runners: Runners  # where they stand by once released cleanly

    def release(self, *, clean: bool = False) -> None:
        """Remove the placement group (what it held is free again). ``clean`` (every command
        ended and its runner was tidied): the runners serve later attempts; else they are
        killed."""
        from ray.util.placement_group import remove_placement_group

        for actor, machine in zip(self.actors, self.machines, strict=True):
            if clean:
                self.runners.give_back(machine, actor)
            else:
                kill_runner(actor)
        try:
            remove_placement_group(self.placement)
        except Exception as error:
            log.warning("could not remove the placement group: %s", error)


class RayGroup:
    backend = "ray"
    poll_s = 0.1  # each poll asks every node: not at a faster caller's pace

    def __init__(self, launch: GroupLaunch, placed: Placed) -> None:
        self.launch = launch
        self.placed = placed  # kept by the caller (``close(keep=True)``) or released here
        self.actors = placed.actors
        self.nodes: list[NodeInfo] = []
        self.offsets = [0 for _ in self.actors]
        self.lost: dict[int, str] = {}  # node → why
        self.codes: dict[int, int] = {}  # node → exit code (negative: signal)
        self.signalled: dict[int, float] = {}  # node → when its end by a signal was first seen
        self.lost_s = RAY_LOST_S.get()
        self._answered = time.monotonic()
        self._metrics = False
        self.shipped: dict[int, int] = {}  # node → bytes of code sent to it for this attempt
        self.relay: Any = None  # the embedded MLflow server offered to remote nodes
        self.offered: dict[str, str] = {}  # what they get to reach it (address, run's token)
        self.hostnames: list[str] = []  # each node's host name, as its machine says it

    # start -------------------------------------------------------------------------------------
    def start(self) -> None:
        import ray

        folders = [node.cwd for node in self.launch.nodes]
        asks = [a.where.remote(f) for a, f in zip(self.actors, folders, strict=True)]
        where = ray.get(asks, timeout=120)
        snapshot = self.launch.code
        if snapshot is None and self.launch.snapshot_if_unseen is not None:
            unseen = [i for i, place in enumerate(where) if not place["sees"]]
            if unseen:
                snapshot = self.launch.snapshot_if_unseen()
                log.info("nodes %s do not see %s: its snapshot is sent", unseen, folders[0])
        self.hostnames = [str(place.get("host") or "") for place in where]
        code = self._ship_code(where, snapshot)
        tracking = self._tracking_for([place["ip"] for place in where])
        master_addr = where[0]["ip"]
        master_port = ray.get(self.actors[0].free_port.remote(), timeout=CALL_TIMEOUT_S)
        checkpoints = self._checkpoint_folders()
        starts = []
        for actor, node, place in zip(self.actors, self.launch.nodes, where, strict=True):
            folder = checkpoints.get(node.node)
            starts.append(
                actor.start.remote(
                    node.argv,
                    {**node.env, **tracking, **({CHECKPOINT_DIR.name: folder} if folder else {})},
                    node.cwd,
                    num_nodes=self.launch.num_nodes,
                    master_addr=master_addr,
                    master_port=master_port,
                    gpus=place["gpus"],
                    files=dict(node.files),
                    code=code,
                )
            )
        started = ray.get(starts, timeout=120)
        for node, place, proc in zip(self.launch.nodes, where, started, strict=True):
            self.nodes.append(
                NodeInfo(
                    node.node,
                    host=place["ip"],
                    pid=proc["pid"],
                    started=proc["started"],
                    gpus=place["gpus"],
                    machine=place["node_id"],
                )
            )
        self._answered = time.monotonic()

    def _checkpoint_folders(self) -> dict[int, str]:
        """Each node's checkpoint folder, on its node, the latest checkpoint put back in it
        through its actor (``launch.checkpoints``); none when the launch did not ask."""
        if self.launch.checkpoints is None:
            return {}
        import ray

        from .node_folders import ActorFolder

        job_id, nodes = self.launch.job_id, self.launch.nodes
        asks = [a.checkpoint_folder.remote(job_id) for a in self.actors]
        paths = ray.get(asks, timeout=CALL_TIMEOUT_S)
        folders = {
            node.node: ActorFolder(actor, path)
            for node, actor, path in zip(nodes, self.actors, paths, strict=True)
        }
        self.launch.checkpoints(dict(folders))
        return {node: folder.path for node, folder in folders.items()}

    def _tracking_for(self, ips: list[str]) -> dict[str, str]:
        """The tracking URI the nodes use instead of the launch's (none: the same): the embedded
        server on this machine's loopback is relayed on this host's address toward the cluster
        (the IP its Ray node has) when a node is on another host, with a token that opens the
        attempt's run only; the relay ends, and the token with it, with the attempt
        (``close``)."""
        env = next((n.env for n in self.launch.nodes), {})
        uri = env.get("MLFLOW_TRACKING_URI")
        if self.relay is not None:
            return self.offered
        if not self.launch.relay_tracking or not uri:
            return {}
        import urllib.parse

        import ray

        from ..mlflow_server.relay import Relay
        from ..tracking.links import is_loopback_http

        here = ray.util.get_node_ip_address()
        port = urllib.parse.urlparse(uri).port
        if not is_loopback_http(uri) or port is None or all(ip == here for ip in ips):
            return {}
        self.relay = Relay(here, port).start()
        self.offered = self.relay.offer(env)
        scoped = "MLFLOW_TRACKING_TOKEN" in self.offered
        log.info(
            "MLflow server offered to the nodes at %s%s",
            self.relay.url,
            " with a token of the run only" if scoped else "",
        )
        return self.offered

    def _ship_code(self, where: list[dict[str, Any]], code: str | None) -> str | None:
        """The code snapshot ``code`` onto every node that does not have it yet (through Ray's
        object store: no shared folder); its digest. Each node keeps what it was sent, so the
        same code crosses once per node."""
        if code is None:
            return None
        import ray

        from ..rendering import size_text
        from .code_shipping import pack_snapshot, snapshot_digest

        digest = snapshot_digest(code)
        have = ray.get([a.has_code.remote(digest) for a in self.actors], timeout=CALL_TIMEOUT_S)
        missing = [i for i, there in enumerate(have) if not there]
        self.shipped = dict.fromkeys(range(len(self.actors)), 0)
        if missing:
            packed = ray.put(pack_snapshot(code))
            sent = ray.get(
                [self.actors[i].receive_code.remote(digest, packed) for i in missing], timeout=600
            )
            self.shipped.update(zip(missing, sent, strict=True))
        log.info(
            "code snapshot %s: %s",
            digest[:12],
            "; ".join(
                f"node {i} (host {place['ip']}): "
                + (f"{size_text(self.shipped[i])} sent" if i in missing else "already there")
                for i, place in enumerate(where)
            ),
        )
        return digest

    # watching ----------------------------------------------------------------------------------
    def _node_lost(self, index: int) -> str | None:
        """Why node ``index`` is lost ("node 1 (host …, Ray node …) was lost") when Ray counts its
        Ray node dead; None while it counts it alive, or cannot tell (the connection check
        decides then)."""
        import ray

        info = self.nodes[index] if index < len(self.nodes) else None
        if info is None or not info.machine:
            return None
        try:
            alive = any(n["NodeID"] == info.machine and n.get("Alive") for n in ray.nodes())
        except Exception:
            return None
        if alive:
            return None
        return f"{self.describe(index)} was lost"

    def describe(self, index: int) -> str:
        """Node ``index`` for people: "node 1 (host gpu-7 at 10.0.0.7, Ray node 5f2a9c1e)"."""
        info = self.nodes[index] if index < len(self.nodes) else None
        if info is None:
            return f"node {index}"
        name = self.hostnames[index] if index < len(self.hostnames) else ""
        host = f"{name} at {info.host}" if name and name != info.host else info.host
        machine = f", Ray node {info.machine[:8]}" if info.machine else ""
        return f"node {index} (host {host}{machine})"

    def _lost_reason(self, index: int, error: BaseException) -> str | None:
        """Why node ``index`` is gone, or None when its Ray node still lives (a passing error)."""
        import ray

        lost = self._node_lost(index)
        if lost is not None:
            return lost
        if isinstance(error, ray.exceptions.ActorDiedError):
            return f"{self.describe(index)}: its jupyter-air actor died ({first_line(error)})"
        return None

    def _ask(self, final: bool) -> None:
        """One round: every live node's exit code and new log lines."""
        import ray

        pending = {}
        for index, actor in enumerate(self.actors):
            if index in self.lost or (index in self.codes and not final):
                continue
            pending[index] = actor.tick.remote(self.offsets[index])
        if not pending:
            return
        refs = list(pending.values())
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=CALL_TIMEOUT_S)
        answered = False
        for index, ref in pending.items():
            if ref not in ready:  # a node cut off answers nothing: Ray says when it counts it dead
                lost = self._node_lost(index)
                if lost is not None:
                    self.lost[index] = lost
                    log.warning("%s", lost)
                continue
            try:
                code, data = ray.get(ref)
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as error:
                reason = self._lost_reason(index, error)
                if reason is not None:
                    self.lost[index] = reason
                    log.warning("%s", reason)
                continue
            answered = True
            if data:
                self.launch.nodes[index].writer.append_raw(data)
                self.offsets[index] += len(data)
            if code is not None and index not in self.codes:
                self.codes[index] = code
        if answered:
            self._answered = time.monotonic()

    def poll(self) -> list[NodeState]:
        self._ask(final=False)
        states = []
        for index in range(len(self.actors)):
            if index in self.lost:
                states.append(NodeState(index, lost=self.lost[index]))
            elif index in self.codes and self.codes[index] >= 0:
                states.append(NodeState(index, exit_code=self.codes[index]))
            elif index in self.codes:
                states.append(self._signalled_state(index, -self.codes[index]))
            else:
                states.append(NodeState(index))
        if time.monotonic() - self._answered > self.lost_s:
            for state in states:
                if state.running:
                    state.lost = (
                        f"no answer from {self.describe(state.node)} for {self.lost_s:.0f} s "
                        f"(the Ray cluster at {os.environ.get('RAY_ADDRESS', '?')})"
                    )
        return states

    def _signalled_state(self, index: int, signum: int) -> NodeState:
        """Node ``index``'s command was killed by ``signum``: lost if its Ray node is gone,
        still running while that is undecided, else killed by the signal."""
        seen = self.signalled.setdefault(index, time.monotonic())
        lost = self._node_lost(index)
        if lost is not None:
            self.lost[index] = lost
            log.warning("%s", lost)
            return NodeState(index, lost=lost)
        if time.monotonic() - seen < SIGNAL_CONFIRM_S:
            return NodeState(index)
        return NodeState(index, signal=signum)

    def sync_logs(self, *, final: bool = False) -> None:
        """Bring the new lines home; ``final``: everything, once the commands ended."""
        if not final:
            return  # poll() brings them at every tick
        import ray

        live = [i for i in range(len(self.actors)) if i not in self.lost]
        if live:
            refs = [self.actors[i].finish_capture.remote() for i in live]
            ray.wait(refs, num_returns=len(refs), timeout=15)
        for _ in range(1000):  # until every live node has nothing more
            before = list(self.offsets)
            self._ask(final=True)
            if self.offsets == before:
                break
        for index in live:
            folder = self.launch.nodes[index].folder
            if folder is not None:
                self._bring_back(index, Path(folder))

    def _bring_back(self, index: int, folder: Path) -> None:
        """Node ``index``'s folder, as its command left it, into ``folder`` on this machine (a
        file the node cannot give is left out; the results read from it say what is missing)."""
        import ray

        seen: dict[str, int] = {}
        for _ in range(10_000):  # READ_LIMIT bytes a round; bounded
            try:
                changed = ray.get(self.actors[index].read_files.remote(seen), timeout=60)
            except Exception as error:
                log.warning("node %d: its folder could not be brought back: %s", index, error)
                return
            if not changed:
                return
            for name, (data, _size) in changed.items():
                target = folder / name
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "ab" if seen.get(name) else "wb") as file:
                    file.write(data)
                seen[name] = seen.get(name, 0) + len(data)

    # metrics -----------------------------------------------------------------------------------
    def start_metrics(self, metrics: Metrics) -> Metrics:
        import ray

        tracking = {**metrics.tracking_env, **self._tracking_for([n.host for n in self.nodes])}
        refs = {
            info.node: actor.start_metrics.remote(
                metrics.run_id, tracking, metrics.interval_s, info.gpus
            )
            for actor, info in zip(self.actors, self.nodes, strict=True)
        }
        for node, ref in refs.items():
            try:
                metrics.summaries[node] = ray.get(ref, timeout=60)
            except Exception as error:
                log.warning("system metrics of node %d are off: %s", node, error)
        self._metrics = True
        return metrics

    def finish_metrics(self) -> None:
        if not self._metrics:
            return
        self._metrics = False
        _wait_all([a.finish_metrics.remote() for a in self._live()], 60)

    # stopping ----------------------------------------------------------------------------------
    def _live(self) -> list[Any]:
        return [a for i, a in enumerate(self.actors) if i not in self.lost]

    def stop(self, grace_s: float) -> None:

        _wait_all([a.stop.remote(grace_s) for a in self._live()], grace_s + 30)

    def leftovers(self, grace_s: float) -> list[str]:
        import ray

        found = []
        for index, actor in enumerate(self.actors):
            if index in self.lost:
                continue
            try:
                pids = ray.get(actor.leftovers.remote(grace_s), timeout=grace_s + 30)
            except Exception as error:
                found.append(f"node {index}: could not check ({first_line(error)})")
                continue
            host = self.nodes[index].host if index < len(self.nodes) else "?"
            found.extend(f"pid {pid} on node {index} (host {host})" for pid in pids)
        return found

    @property
    def reusable(self) -> bool:
        """Whether the nodes can serve another attempt: every command ended on its own, no node
        lost."""
        return not self.lost and len(self.codes) == len(self.actors)

    def forget_checkpoints(self) -> None:
        if self.launch.checkpoints is not None:
            job_id = self.launch.job_id
            _wait_all([a.remove_checkpoint_folder.remote(job_id) for a in self._live()], 30)

    def close(self, *, keep: bool = False) -> None:
        """Tidy every node (its folder, its log); then release the placement group, or with
        ``keep`` leave it and the runners to the caller (``placed``). Released, the runners
        serve later attempts when every command ended and every node was tidied; else they
        are killed."""
        closing = [a.close.remote() for a in self._live()]
        _wait_all(closing, 30)
        if self.relay is not None:
            self.relay.close()
            self.relay = None
        if not keep:
            self.placed.release(clean=self.reusable and all(map(answered, closing)))


def _wait_all(refs: list[Any], timeout_s: float) -> None:
    """Wait for every call (errors included: an actor that died) up to ``timeout_s``."""
    if not refs:
        return
    import ray

    ray.wait(refs, num_returns=len(refs), timeout=timeout_s)


def answered(ref: Any) -> bool:
    """Whether the call ``ref`` has answered, without an error (not waited for)."""
    import ray

    try:
        ray.get(ref, timeout=0)
    except Exception:
        return False
    return True


def first_line(error: BaseException) -> str:
    """An error's first line, short enough for a log line or a message."""
    text = str(error).strip().splitlines()
    return text[0][:200] if text else type(error).__name__
