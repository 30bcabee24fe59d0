"""Node runners outlive an attempt (backends/ray_runners.py): one idle runner per Ray node, handed
to one attempt at a time, the extra ones and the idle ones at the end killed; a worker held on a
GPU node, once per node, let go before a bundle task there and at the end; a runner serves a
second attempt with nothing of the first left (its folder, its run's MLflow token)."""

from __future__ import annotations

import os
from pathlib import Path

from jupyter_air.backends.ray_node import NodeRunner
from jupyter_air.backends.ray_runners import Runners


def test_one_idle_runner_per_ray_node_is_handed_out_once():
    killed: list[str] = []
    runners = Runners(kill=killed.append)
    assert runners.take("node-a") is None  # none yet: the caller makes one
    runners.give_back("node-a", "runner-1")
    runners.give_back("node-b", "runner-2")
    runners.give_back("node-a", "runner-3")  # node-a has one already: this one goes
    assert killed == ["runner-3"] and runners.idle() == 2
    assert runners.take("node-a") == "runner-1"
    assert runners.take("node-a") is None  # handed to one attempt only
    runners.end()
    assert killed == ["runner-3", "runner-2"] and runners.idle() == 0
    assert runners.take("node-b") is None


def test_a_worker_is_held_once_per_node_and_let_go_before_its_bundle_task():
    freed: list[list[str]] = []
    runners = Runners(kill=lambda actor: None, hold=lambda node: f"hold-{node}", free=freed.append)
    runners.hold("node-a")
    runners.hold("node-b")
    runners.hold("node-a")  # held already: not a second worker there
    assert runners.held() == ["node-a", "node-b"]
    runners.free(["node-a", "node-c"])  # a placement on node-a (and on node-c, none held)
    assert freed == [["hold-node-a"]] and runners.held() == ["node-b"]
    runners.free(["node-a"])  # nothing held there any more: nothing to let go
    assert freed == [["hold-node-a"]]
    runners.end()
    assert freed == [["hold-node-a"], ["hold-node-b"]] and runners.held() == []


def test_no_worker_is_held_where_the_runners_are_not_kept():
    runners = Runners(kill=lambda actor: None, hold=lambda node: None, free=lambda holds: None)
    runners.hold("node-a")  # KEEP_RUNNERS_S=0: hold_worker holds nothing
    assert runners.held() == []


class Monitor:
    summary = "sampled"
    finished = False

    def finish(self) -> None:
        self.finished = True


def test_a_runner_serves_the_next_attempt_with_nothing_of_the_last(monkeypatch):
    import jupyter_air.tracking.system_metrics as system_metrics

    monitor = Monitor()
    seen: dict[str, str | None] = {}

    def start_system_metrics(run_id: str, **kwargs: object) -> Monitor:
        seen["token"] = os.environ.get("MLFLOW_TRACKING_TOKEN")  # what its client reads
        seen["gpus"] = str(kwargs["visible_gpus"])
        return monitor

    monkeypatch.setattr(system_metrics, "start_system_metrics", start_system_metrics)
    monkeypatch.delenv("MLFLOW_TRACKING_TOKEN", raising=False)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:1")  # the runner's own
    runner = NodeRunner()
    runner.begin("job-1", 1, 0, True, "1")
    first = Path(runner.folder)
    assert runner.gpus == "1"  # the bundle's GPUs, as told: what where() says
    (runner.files / "result.bin").write_bytes(b"x")
    tracking = {"MLFLOW_TRACKING_URI": "http://10.0.0.1:5000", "MLFLOW_TRACKING_TOKEN": "s3cret"}
    assert runner.start_metrics("run-1", tracking, 1.0, "1") == "sampled"
    assert seen == {"token": "s3cret", "gpus": "1"}
    runner.close()
    assert monitor.finished and not first.exists()
    # the run's token is gone from the runner, its own URI is back
    assert "MLFLOW_TRACKING_TOKEN" not in os.environ
    assert os.environ["MLFLOW_TRACKING_URI"] == "http://127.0.0.1:1"
    runner.begin("job-2", 1, 1, False, "0,1")
    assert runner.gpus == ""  # a node without GPUs is given none
    assert Path(runner.folder) != first and list(runner.files.iterdir()) == []
    runner.begin("job-3", 1, 0, True, "0")  # begun again without a close: the last is tidied
    assert not (Path(runner.folder).parent / first.name).exists()
    runner.close()
