"""Managed runs against a real tracking server: status at the end (FINISHED / FAILED / KILLED),
nesting under the kernel's active run, resuming MLFLOW_RUN_ID, tags, the worker environment and
system metrics."""

from __future__ import annotations

import os
import time

import pytest
from tracking_support import in_notebook, reset_fluent, unique, use_server

from jupyter_air.tracking.naming import TAG_KERNEL_ID, TAG_LAUNCHER, TAG_NOTEBOOK
from jupyter_air.tracking.runs import ManagedRun


@pytest.fixture
def server(mlflow_server, monkeypatch, tmp_path):
    use_server(monkeypatch, mlflow_server.url)
    in_notebook(monkeypatch, tmp_path)
    yield mlflow_server
    reset_fluent()


def client():
    import mlflow

    return mlflow.MlflowClient()


def test_plain_run_runs_then_finishes_with_tags(server):
    with ManagedRun.start(launcher="distributed", run_name="plain", system_metrics=False) as run:
        live = client().get_run(run.run_id)
        assert live.info.status == "RUNNING"
        assert run.status == "RUNNING"
    ended = client().get_run(run.run_id)
    assert ended.info.status == "FINISHED"
    assert ended.info.end_time is not None
    assert run.status == "FINISHED"
    tags = ended.data.tags
    user = os.environ["JUPYTERHUB_USER"]
    assert tags[TAG_NOTEBOOK] == "exp/train.ipynb"
    assert tags[TAG_LAUNCHER] == "distributed"
    assert tags["mlflow.user"] == user
    assert tags["mlflow.source.name"] == "exp/train.ipynb"
    assert tags["mlflow.source.type"] == "NOTEBOOK"
    assert TAG_KERNEL_ID not in tags  # not in a kernel
    assert "mlflow.parentRunId" not in tags
    assert ended.info.run_name == "plain"
    assert run.experiment_name == f"/Users/{user}/exp/train"


def test_exception_fails_the_run(server):
    with pytest.raises(ZeroDivisionError), ManagedRun.start(system_metrics=False) as run:
        1 / 0  # noqa: B018
    assert client().get_run(run.run_id).info.status == "FAILED"


def test_keyboard_interrupt_kills_the_run(server):
    with pytest.raises(KeyboardInterrupt), ManagedRun.start(system_metrics=False) as run:
        raise KeyboardInterrupt
    assert client().get_run(run.run_id).info.status == "KILLED"


def test_end_is_once_and_checked(server):
    run = ManagedRun.start(system_metrics=False)
    with pytest.raises(ValueError, match="FINISHED, FAILED, KILLED"):
        run.end("DONE")
    run.end("KILLED")
    run.end("FINISHED")  # too late: ended already
    assert client().get_run(run.run_id).info.status == "KILLED"


def test_nested_under_the_kernels_active_run(server):
    import mlflow

    with mlflow.start_run(experiment_id=client().create_experiment(unique("parent"))) as parent:
        with ManagedRun.start(run_name="child", system_metrics=False) as child:
            assert mlflow.active_run().info.run_id == parent.info.run_id  # stack untouched
        assert mlflow.active_run().info.run_id == parent.info.run_id
        assert child.parent_run_id == parent.info.run_id
        assert child.experiment_id == parent.info.experiment_id
        assert client().get_run(parent.info.run_id).info.status == "RUNNING"
    child_run = client().get_run(child.run_id)
    assert child_run.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert child_run.info.status == "FINISHED"
    assert client().get_run(parent.info.run_id).info.status == "FINISHED"


def test_not_nested_when_asked(server):
    import mlflow

    experiment_id = client().create_experiment(unique("parent"))
    with (
        mlflow.start_run(experiment_id=experiment_id),
        ManagedRun.start(nested=False, system_metrics=False) as run,
    ):
        assert run.parent_run_id is None


def test_mlflow_run_id_is_resumed_and_ended(server, monkeypatch):
    experiment_id = client().create_experiment(unique("resume"))
    existing = client().create_run(experiment_id, run_name="earlier")
    client().set_terminated(existing.info.run_id, "FAILED")
    monkeypatch.setenv("MLFLOW_RUN_ID", existing.info.run_id)
    with ManagedRun.start(launcher="workload", tags={"attempt": 2}, system_metrics=False) as run:
        assert run.run_id == existing.info.run_id
        assert run.resumed
        assert client().get_run(run.run_id).info.status == "RUNNING"
        assert run.payload()["resumed"] is True
    resumed = client().get_run(run.run_id)
    assert resumed.info.status == "FINISHED"
    assert resumed.info.experiment_id == experiment_id
    assert resumed.data.tags["attempt"] == "2"
    assert resumed.data.tags[TAG_LAUNCHER] == "workload"
    # only the run id in the environment changes which run; it stays for the next call
    assert os.environ["MLFLOW_RUN_ID"] == existing.info.run_id


def test_explicit_experiment_and_tags_win(server):
    name = unique("workload-exp")
    with ManagedRun.start(
        launcher="workload",
        experiment=name,
        tags={"mlflow.source.name": "train.yaml", "team": "x"},
        system_metrics=False,
    ) as run:
        pass
    got = client().get_run(run.run_id)
    assert client().get_experiment(got.info.experiment_id).name == name
    assert got.data.tags["mlflow.source.name"] == "train.yaml"
    assert got.data.tags["team"] == "x"


def test_env_for_workers(server):
    with ManagedRun.start(system_metrics=False) as run:
        env = run.env()
    assert env == {
        "MLFLOW_TRACKING_URI": server.url,
        "MLFLOW_EXPERIMENT_ID": run.experiment_id,
        "MLFLOW_EXPERIMENT_NAME": run.experiment_name,
        "MLFLOW_RUN_ID": run.run_id,
    }


def test_system_metrics_recorded_per_node(server):
    name = "system/node_0/cpu_utilization_percentage"
    with ManagedRun.start(sampling_interval_s=0.3, node_id="node_0") as run:
        deadline = time.monotonic() + 60  # two samples logged while the run runs
        while len(client().get_metric_history(run.run_id, name)) < 2:
            assert time.monotonic() < deadline, "fewer than 2 system metrics samples in 60 s"
            time.sleep(0.2)
    metrics = client().get_run(run.run_id).data.metrics
    assert "system/node_0/cpu_utilization_percentage" in metrics
    assert "system/node_0/system_memory_usage_megabytes" in metrics
    assert metrics["system/node_0/system_memory_usage_megabytes"] > 0
    history = client().get_metric_history(run.run_id, "system/node_0/cpu_utilization_percentage")
    assert len(history) >= 2
    note = client().get_run(run.run_id).data.tags["jupyter_air.system_metrics.node_0"]
    assert note.startswith("cpu, memory, disk, network; ")
    assert "GPU" in note  # "N GPUs" where NVML works; else why there are none


def test_system_metrics_of_a_run_shorter_than_one_interval(server):
    with ManagedRun.start(node_id="node_3") as run:  # MLflow's 10 s interval
        pass
    metrics = client().get_run(run.run_id).data.metrics
    assert "system/node_3/cpu_utilization_percentage" in metrics


def test_node_id_wins_over_mlflows_variable(server, monkeypatch):
    monkeypatch.setenv("MLFLOW_SYSTEM_METRICS_NODE_ID", "elsewhere")
    with ManagedRun.start(node_id="node_1", sampling_interval_s=0.2) as run:
        time.sleep(0.3)
    metrics = client().get_run(run.run_id).data.metrics
    assert "system/node_1/cpu_utilization_percentage" in metrics
    assert not any("elsewhere" in key for key in metrics)


def test_open_runs_end_killed_at_exit(server):
    from jupyter_air.tracking import runs

    run = ManagedRun.start(system_metrics=False)
    runs._end_open_runs()  # what atexit does when the kernel shuts down
    assert client().get_run(run.run_id).info.status == "KILLED"
    assert run.ended
