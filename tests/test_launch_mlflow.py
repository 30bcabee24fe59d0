"""``.distributed()`` against a real MLflow server: one run per call, shared by every rank and
ended by the kernel alone (a rank's ``end_run()`` or exit leaves it RUNNING), nested inside an
active run, resumed from ``MLFLOW_RUN_ID``, in the notebook's experiment by default; rank output
arriving while the function runs; a failing rank marks the run FAILED; ``set_experiment`` inside
the function is explained."""

from __future__ import annotations

import json
import sys
import threading
import time

import pytest
from launch_support import TimedStream, run_dirs, wait_for
from tracking_support import in_notebook, reset_fluent, unique, use_server

from jupyter_air import distributed
from jupyter_air.launch.checkpoint import NothingToResume
from jupyter_air.launch.driver import TAG_ERROR, TAG_FUNCTION, TAG_RANKS
from jupyter_air.launch.errors import ExperimentChangedError
from jupyter_air.tracking.naming import TAG_LAUNCHER, TAG_NOTEBOOK

pytestmark = pytest.mark.timeout(150)


@pytest.fixture
def server(mlflow_server, monkeypatch, tmp_path):
    use_server(monkeypatch, mlflow_server.url)
    in_notebook(monkeypatch, tmp_path)
    monkeypatch.setenv("JUPYTER_AIR_DATA_DIR", str(tmp_path / "data"))
    yield mlflow_server
    reset_fluent()


def client():
    import mlflow

    return mlflow.MlflowClient()


def only_run(experiment_name: str):
    experiment = client().get_experiment_by_name(experiment_name)
    assert experiment is not None, experiment_name
    (run,) = client().search_runs([experiment.experiment_id])
    return run


def test_ranks_ending_the_run_or_exiting_leave_it_to_the_kernel(server, monkeypatch, tmp_path):
    """Also: output lines arrive while the function still runs; the default experiment."""
    marker = tmp_path / "rank0-ended-run"

    @distributed(gpus=2, run_name="shared")
    def logs_then_waits(marker_path):
        import os
        import pathlib
        import time

        import mlflow

        rank = int(os.environ["RANK"])
        print(f"first line of rank {rank}", flush=True)
        if rank == 0:
            mlflow.log_metric("loss", 0.25)
            mlflow.end_run()  # must not end the kernel's run
            mlflow.log_metric("loss", 0.125, step=1)  # still the same run
            pathlib.Path(marker_path).write_text(mlflow.active_run().info.run_id)
            time.sleep(3)
        # rank 1 returns at once: its process exits (MLflow's atexit hook) while rank 0 sleeps
        print(f"last line of rank {rank}", flush=True)
        return rank

    stdout = TimedStream()
    monkeypatch.setattr(sys, "stdout", stdout)
    outcome: dict = {}

    def call():
        try:
            outcome["results"] = logs_then_waits.distributed(str(marker))
        except BaseException as error:
            outcome["error"] = error
        outcome["returned"] = time.monotonic()

    thread = threading.Thread(target=call)
    thread.start()
    run_id = wait_for(lambda: marker.exists() and marker.read_text(), timeout_s=60)
    rank1_done = wait_for(lambda: stdout.first_time("[rank 1] last line of rank 1"))
    time.sleep(0.3)  # rank 1 has exited by now, its atexit hooks run
    live = client().get_run(run_id)
    assert live.info.status == "RUNNING"
    assert thread.is_alive()
    # GPU sampling is held awake while the ranks run (telemetry/hold_files.py)
    holds = list((server_data_dir() / "gpu-holds").glob("*.json"))
    assert [json.loads(h.read_text())["reason"] for h in holds] == [
        f"distributed {logs_then_waits.__qualname__}() — run shared"
    ]
    thread.join(60)
    assert list((server_data_dir() / "gpu-holds").glob("*.json")) == []

    assert outcome.get("results") == [0, 1], outcome.get("error")
    first = stdout.first_time("[rank 0] first line of rank 0")
    last = stdout.first_time("[rank 0] last line of rank 0")
    assert first is not None and last is not None and rank1_done is not None
    assert last - first > 2.0  # the first line was in the cell seconds before the function ended
    assert outcome["returned"] - first > 2.0

    run = client().get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "shared"
    assert [m.value for m in client().get_metric_history(run_id, "loss")] == [0.25, 0.125]
    tags = run.data.tags
    assert tags[TAG_LAUNCHER] == "distributed"
    assert tags[TAG_FUNCTION].endswith("logs_then_waits")
    assert tags[TAG_RANKS] == "2 CPU ranks (gloo)"
    assert tags[TAG_NOTEBOOK] == "exp/train.ipynb"
    user = server_user()
    experiment = client().get_experiment(run.info.experiment_id)
    assert experiment.name == f"/Users/{user}/exp/train"  # the notebook's experiment
    assert "system/node_0/cpu_utilization_percentage" in run.data.metrics


def ends_the_run_early(route, markers):
    """Rank 0 ends the call's run by ``route``; both ranks then wait until the test has looked
    at the run, and rank 1 logs once more. Both log 100 values asynchronously first (held by
    MLflow for up to 30 s: MLFLOW_ASYNC_LOGGING_BUFFERING_SECONDS)."""
    import os
    import pathlib
    import time

    import mlflow
    from mlflow import MlflowClient

    rank = int(os.environ["RANK"])
    run_id = os.environ["MLFLOW_RUN_ID"]
    folder = pathlib.Path(markers)

    def wait(name):
        deadline = time.monotonic() + 60
        while not (folder / name).exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {name} marker after 60 s")
            time.sleep(0.05)

    for step in range(100):
        mlflow.log_metric(f"async_{rank}", step, step=step, synchronous=False)
    if rank == 1:
        (folder / "rank1-started").touch()  # resumed the run before rank 0 ends it
        wait("ended")
        (folder / "rank1-works").touch()
        wait("checked")
        mlflow.log_metric("after", 1.0)
        return "rank 1 done"
    wait("rank1-started")
    if route == "end_run":
        mlflow.end_run()
    elif route == "set_terminated":
        MlflowClient().set_terminated(run_id, "FINISHED")  # Lightning's MLFlowLogger.finalize
    else:
        MlflowClient().update_run(run_id, status="KILLED", name="renamed in rank 0")
    (folder / "ended").touch()
    wait("checked")
    return "rank 0 done"  # and exits: MLflow's atexit hook ends the run once more


@pytest.mark.parametrize("route", ["end_run", "set_terminated", "update_run"])
def test_no_route_of_a_rank_ends_the_calls_run(server, tmp_path, route):
    """The run stays RUNNING while rank 1 works after rank 0 ended it, and rank 0's asynchronous
    values are sent when it ends the run, as MLflow would; the kernel ends the run FINISHED with
    every value: rank 1's later metric and asynchronous ones (sent at its exit)."""
    markers = tmp_path / "markers"
    markers.mkdir()
    call = distributed(
        gpus=2,
        run_name=unique("ended-early"),
        env={"MLFLOW_ASYNC_LOGGING_BUFFERING_SECONDS": "30"},
    )(ends_the_run_early)
    outcome: dict = {}

    def run():
        try:
            outcome["results"] = call.distributed(route, str(markers))
        except BaseException as error:
            outcome["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    try:
        wait_for(lambda: (markers / "rank1-works").exists(), timeout_s=90)
        (run_dir,) = run_dirs(server_data_dir())
        run_id = json_field(run_dir / "launch.json", "mlflow_run_id")
        assert client().get_run(run_id).info.status == "RUNNING"
        sent = client().get_metric_history(run_id, "async_0")
        assert sorted(m.step for m in sent) == list(range(100)), len(sent)
    finally:
        (markers / "checked").touch()
        thread.join(90)
    assert outcome.get("results") == ["rank 0 done", "rank 1 done"], outcome.get("error")
    run = client().get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.metrics["after"] == 1.0
    for rank in (0, 1):
        history = client().get_metric_history(run_id, f"async_{rank}")
        assert sorted(m.step for m in history) == list(range(100)), (rank, len(history))
    if route == "update_run":
        assert run.info.run_name == "renamed in rank 0"  # the rename applies, the status not


def test_mlflow_imported_before_the_guard_cannot_end_the_run_either(server):
    """MlflowClient bound by an import that ran before the guard patched MLflow (a library
    imported first) is patched as well; a run the process creates itself still ends."""
    import subprocess

    experiment_id = client().create_experiment(unique("guarded"))
    protected = client().create_run(experiment_id).info.run_id
    script = f"""
from mlflow.tracking import MlflowClient
from jupyter_air.launch.mlflow_guard import MlflowGuard

MlflowGuard({protected!r}).install()
client = MlflowClient()
client.set_terminated({protected!r}, "FINISHED")
client.update_run({protected!r}, status="FAILED")
own = client.create_run({experiment_id!r}).info.run_id
client.set_terminated(own, "FINISHED")
print(own)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    own = done.stdout.split()[-1]
    assert client().get_run(protected).info.status == "RUNNING"
    assert client().get_run(own).info.status == "FINISHED"


def server_user() -> str:
    import os

    return os.environ["JUPYTERHUB_USER"]


def test_nested_inside_an_active_run(server):
    import mlflow

    experiment_id = client().create_experiment(unique("parent"))

    @distributed(gpus=1)
    def logs():
        import mlflow

        mlflow.log_param("lr", "0.1")
        return mlflow.active_run().info.run_id

    with mlflow.start_run(experiment_id=experiment_id) as parent:
        (child_id,) = logs.distributed()
        assert mlflow.active_run().info.run_id == parent.info.run_id  # untouched
    child = client().get_run(child_id)
    assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert child.info.experiment_id == experiment_id
    assert child.info.status == "FINISHED"
    assert child.data.params["lr"] == "0.1"
    assert client().get_run(parent.info.run_id).info.status == "FINISHED"


def test_mlflow_run_id_is_resumed(server, monkeypatch):
    experiment_id = client().create_experiment(unique("resume"))
    earlier = client().create_run(experiment_id, run_name="earlier")
    client().set_terminated(earlier.info.run_id, "FAILED")
    monkeypatch.setenv("MLFLOW_RUN_ID", earlier.info.run_id)

    @distributed(gpus=1)
    def resumes():
        import os

        import mlflow

        given = os.environ.get("MLFLOW_RUN_ID")  # MLflow removes it once it resumed the run
        mlflow.log_metric("resumed", 1)
        return given, mlflow.active_run().info.run_id

    assert resumes.distributed() == [(earlier.info.run_id, earlier.info.run_id)]
    run = client().get_run(earlier.info.run_id)
    assert run.info.status == "FINISHED"
    assert run.data.metrics["resumed"] == 1


def test_a_failing_rank_marks_the_run_failed(server):
    @distributed(gpus=2, run_name=unique("fails"))
    def fails():
        import os

        if os.environ["RANK"] == "1":
            raise KeyError("missing column")
        return 0

    with pytest.raises(KeyError) as caught:
        fails.distributed()
    assert "raised on rank 1 of 2" in "\n".join(caught.value.__notes__)
    (run_dir,) = run_dirs(server_data_dir())
    run_id = json_field(run_dir / "launch.json", "mlflow_run_id")
    run = client().get_run(run_id)
    assert run.info.status == "FAILED"
    assert "rank 1" in run.data.tags[TAG_ERROR] and "missing column" in run.data.tags[TAG_ERROR]


def test_set_experiment_inside_the_function_is_explained(server):
    other = unique("other")

    @distributed(gpus=1)
    def switches_experiment():
        import mlflow

        mlflow.set_experiment(other)
        mlflow.log_metric("x", 1)

    with pytest.raises(ExperimentChangedError) as caught:
        switches_experiment.distributed()
    message = str(caught.value)
    assert "mlflow.set_experiment was called inside the function" in message
    assert repr(other) in message
    assert "before calling .distributed()" in message and "experiment='name'" in message
    assert "does not match environment run ID" in str(caught.value.__cause__)


def server_data_dir():
    import os
    from pathlib import Path

    return Path(os.environ["JUPYTER_AIR_DATA_DIR"])


def json_field(path, name):
    import json

    return json.loads(path.read_text())[name]


def test_run_display_is_shown_then_updated(server, monkeypatch):
    """The run appears when it starts and shows its end status (the bundle itself: the notebook
    test)."""
    shown: list[tuple[str, dict]] = []

    class Display:
        def __init__(self, run_id, server_url=None):
            self.run_id = run_id

        def show(self, payload):
            shown.append(("show", payload))

        def update(self, payload):
            shown.append(("update", payload))

    import jupyter_air.tracking.runs as runs

    monkeypatch.setattr(runs, "RunDisplay", Display)

    @distributed(gpus=1)
    def quick():
        return 1

    assert quick.distributed() == [1]
    assert [(what, p["status"]) for what, p in shown] == [
        ("show", "RUNNING"),
        ("update", "FINISHED"),
    ]


def test_resume_continues_the_last_call_its_run_and_its_checkpoint_folder(server):
    """Every rank gets the call's checkpoint folder; ``resume=True`` continues the function's
    last call (its MLflow run, its folder: what rank 0 saved is there); a call without it starts
    afresh; ``resume=RUN_ID`` continues that run."""
    experiment = unique("ckpt-calls")

    @distributed(gpus=2, experiment=experiment)
    def train(epochs):
        import os
        import pathlib

        import torch.distributed as dist

        folder = os.environ["JUPYTER_AIR_CHECKPOINT_DIR"]
        path = os.path.join(folder, "epoch.txt")
        start = int(pathlib.Path(path).read_text()) if os.path.exists(path) else 0
        dist.init_process_group("gloo")
        dist.barrier()  # every rank read before rank 0 saves
        dist.destroy_process_group()
        if os.environ["RANK"] == "0":
            with open(path + ".tmp", "w") as file:
                file.write(str(start + epochs))
            os.replace(path + ".tmp", path)
        return folder, start

    with pytest.raises(NothingToResume, match="has not run in this kernel"):
        train.distributed(1, resume=True)
    first = train.distributed(3)
    assert [start for _, start in first] == [0, 0] and first[0][0] == first[1][0]  # one folder
    resumed = train.distributed(2, resume=True)
    assert resumed == [(first[0][0], 3), (first[0][0], 3)]  # both ranks found rank 0's file
    fresh = train.distributed(1)
    assert [start for _, start in fresh] == [0, 0] and fresh[0][0] != first[0][0]
    runs = client().search_runs(
        [client().get_experiment_by_name(experiment).experiment_id], order_by=["start_time ASC"]
    )
    assert len(runs) == 2  # the resumed call added no run: it continued the first
    first_run = runs[0].info.run_id
    assert first[0][0].endswith(first_run)  # the folder is the run's
    again = train.distributed(4, resume=first_run)  # by run id, after another call
    assert [start for _, start in again] == [5, 5]
    with pytest.raises(ValueError, match="resume must be True, False or an MLflow run id"):
        train.distributed(1, resume="../etc")


def test_max_restarts_starts_every_rank_again_from_the_checkpoint_folder(server, capsys):
    """A rank that crashes (its process gone) and then one that raises: torch elastic starts
    both ranks again twice (``max_restarts=2``); each round resumes from what rank 0 saved in
    ``$JUPYTER_AIR_CHECKPOINT_DIR``; the cell says each restart and shows every round's lines;
    the run records the restarts and ends FINISHED with the last round's values."""
    experiment = unique("restarts")

    @distributed(gpus=2, max_restarts=2, grace_period=2, experiment=experiment)
    def train():
        import os
        import pathlib

        import torch.distributed as dist

        rank, restart = int(os.environ["RANK"]), int(os.environ["TORCHELASTIC_RESTART_COUNT"])
        path = pathlib.Path(os.environ["JUPYTER_AIR_CHECKPOINT_DIR"]) / "epoch.txt"
        start = int(path.read_text()) if path.exists() else 0
        print(f"round {restart} starts at epoch {start}", flush=True)
        dist.init_process_group("gloo")
        dist.barrier()  # both ranks read before rank 0 saves
        if rank == 0:
            path.with_suffix(".tmp").write_text(str(start + 5))
            path.with_suffix(".tmp").replace(path)
        dist.barrier()  # saved before rank 1 fails
        if rank == 1 and restart == 0:
            os._exit(3)  # a crash: no exception, no error record
        if rank == 1 and restart == 1:
            raise ValueError("loss is nan")
        dist.destroy_process_group()
        return restart, start

    assert train.distributed() == [(2, 10), (2, 10)]
    out, err = capsys.readouterr()
    for restart, epoch in ((0, 0), (1, 5), (2, 10)):
        for rank in (0, 1):
            assert f"[rank {rank}] round {restart} starts at epoch {epoch}" in out
    assert "a rank failed — torch elastic starts every rank again (restart 1 of 2)" in err
    assert (
        "rank 1: ValueError: loss is nan — torch elastic starts every rank again (restart 2" in err
    )
    run = only_run(experiment)
    assert run.info.status == "FINISHED"
    assert run.data.tags["jupyter_air.restarts"] == "2"


def test_when_restarts_run_out_the_last_rounds_error_is_raised(server, capsys):
    experiment = unique("restarts-out")

    @distributed(gpus=2, max_restarts=1, grace_period=2, experiment=experiment)
    def always_fails():
        import os

        if os.environ["RANK"] == "1":
            raise KeyError(f"column {os.environ['TORCHELASTIC_RESTART_COUNT']}")
        return 0

    with pytest.raises(KeyError, match="column 1") as caught:
        always_fails.distributed()
    assert "raised on rank 1 of 2" in "\n".join(caught.value.__notes__)
    assert (
        "rank 1: KeyError: 'column 0' — torch elastic starts every rank again (restart 1 of 1)"
        in (capsys.readouterr().err)
    )
    run = only_run(experiment)
    assert run.info.status == "FAILED"
    assert run.data.tags["jupyter_air.restarts"] == "1"
    assert "column 1" in run.data.tags[TAG_ERROR]
