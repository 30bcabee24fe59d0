"""The live widget of a running call (jupyter_air/notebook/live_widget.py): its status line, the
metrics read from a real MLflow server and charted by step, the run card taking its place when
the run ends, and no widget where the frontend cannot show one."""

from __future__ import annotations

import time
from typing import Any

import pytest
from tracking_support import unique, use_server

from jupyter_air.notebook.live_widget import (
    WIDGET_VIEW_MIME,
    WIDGETS_ENV,
    LiveCall,
    LiveStatus,
    fetch_metrics,
    start_live,
    widgets_shown,
)
from jupyter_air.tracking.display import MIME_TYPE, RunDisplay

pytestmark = pytest.mark.timeout(120)

CARD = {MIME_TYPE: {"run_id": "r"}, "text/html": "<div>card</div>", "text/plain": "card"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def client(mlflow_server, monkeypatch):
    from mlflow.tracking import MlflowClient

    use_server(monkeypatch, mlflow_server.url)
    return MlflowClient(tracking_uri=mlflow_server.url)


def new_run(client) -> str:
    experiment = client.create_experiment(unique("live"))
    return client.create_run(experiment).info.run_id


def log(client, run_id: str, key: str, steps: range, start: float = 1.0) -> None:
    now = int(time.time() * 1000)
    for step in steps:
        client.log_metric(run_id, key, start / (step + 1), timestamp=now + step, step=step)


def live_call(uri: str | None, run_id: str | None, clock: Clock, shown: list) -> LiveCall:
    return LiveCall(
        display_id="jupyter-air-run-r",
        card=CARD,
        status=LiveStatus(where="2 ranks (CPU, gloo)", attempt=1, attempts=1),
        tracking_uri=uri,
        run_id=run_id,
        cancel={"action": "interrupt"},
        publish=lambda bundle, display_id: shown.append((display_id, bundle)),
        clock=clock,
        poll_s=3600,
        tick_s=3600,  # the thread reads once at the start; the test reads again itself
    )


def wait_for(condition: Any, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.05)


def test_status_line_says_state_elapsed_attempt_where_and_step():
    status = LiveStatus(where="2 nodes x 2 CPU processes", attempt=2, attempts=3, started=10.0)
    status.state = "RUNNING"
    assert status.text(22.5) == "RUNNING · 12.5 s · attempt 2 of 3 · 2 nodes x 2 CPU processes"
    status.take({"train_loss": [(0, 1.0), (7, 0.5)], "lr": [(3, 0.1)]})
    assert status.text(85.0).endswith("· step 7")
    assert "1 min 15 s" in status.text(85.0)
    single = LiveStatus(where="2 ranks (CPU, gloo)", started=0.0)
    assert "attempt" not in single.text(1.0)  # one attempt: nothing to count
    single.take({})
    assert single.step is None


def test_metrics_by_step_without_system_metrics(client, mlflow_server):
    run_id = new_run(client)
    assert fetch_metrics(mlflow_server.url, run_id) == {}
    log(client, run_id, "train_loss", range(5))
    log(client, run_id, "val_loss", range(2), start=2.0)
    client.log_metric(run_id, "system/cpu_utilization_percentage", 30.0, step=0)
    series = fetch_metrics(mlflow_server.url, run_id)
    assert sorted(series) == ["train_loss", "val_loss"]
    assert [step for step, _ in series["train_loss"]] == [0, 1, 2, 3, 4]
    assert series["train_loss"][4] == (4, pytest.approx(0.2))
    assert series["val_loss"] == [(0, 2.0), (1, 1.0)]
    # bounded: as many keys and points as asked at most
    small = fetch_metrics(mlflow_server.url, run_id, max_keys=1, max_points=2)
    assert list(small) == ["train_loss"]
    assert [step for step, _ in small["train_loss"]] == [0, 1]


def test_an_unreachable_server_keeps_what_is_shown(client, mlflow_server):
    run_id = new_run(client)
    log(client, run_id, "train_loss", range(3))
    clock, shown = Clock(), []
    live = live_call(mlflow_server.url, run_id, clock, shown).start()
    try:
        wait_for(lambda: live.chart)
        live.tracking_uri = "http://127.0.0.1:9"  # nothing listens there
        started = time.monotonic()
        live.poll()
        assert time.monotonic() - started < 30  # no retries
        assert live.error
        assert live.chart["train_loss"][0] == [0, 1, 2]
    finally:
        live.finish()


def test_chart_grows_by_step_and_the_run_card_takes_its_place(client, mlflow_server):
    run_id = new_run(client)
    clock, shown = Clock(), []
    live = live_call(mlflow_server.url, run_id, clock, shown).start()
    try:
        # shown in place of the run card, with the card as its fallback
        display_id, bundle = shown[0]
        assert display_id == "jupyter-air-run-r"
        assert bundle[WIDGET_VIEW_MIME]["model_id"] == live._box.model_id
        assert bundle["text/html"] == CARD["text/html"]
        assert bundle[MIME_TYPE] == CARD[MIME_TYPE]
        assert live._text.card == CARD["text/html"]
        assert live._text.cancel == {"action": "interrupt"}
        wait_for(lambda: live.polls >= 1)  # the follow thread's first read
        assert live.error is None

        # nothing logged: no chart, the status line alone
        live.poll()
        assert live.chart == {}
        assert len(live._box.children) == 1
        clock.now += 4.2
        live.set(state="RUNNING")
        assert live._text.status == "RUNNING · 4.2 s · 2 ranks (CPU, gloo)"

        log(client, run_id, "train_loss", range(3))
        live.poll()
        assert live.chart["train_loss"][0] == [0, 1, 2]
        assert len(live._box.children) == 2
        assert live._text.status.endswith("· step 2")

        log(client, run_id, "train_loss", range(3, 6))
        log(client, run_id, "accuracy", range(2))
        live.poll()
        steps, values = live.chart["train_loss"]
        assert steps == [0, 1, 2, 3, 4, 5]
        assert values[5] == pytest.approx(1 / 6)
        assert live.chart["accuracy"][0] == [0, 1]  # one trace per key
        assert live._text.status.endswith("· step 5")
    finally:
        final = {**CARD, "text/plain": "card FINISHED"}
        live.finish(final)
    assert shown[-1] == ("jupyter-air-run-r", final)  # the run card, as it ended
    assert WIDGET_VIEW_MIME not in shown[-1][1]
    assert live._thread is not None and not live._thread.is_alive()
    assert live._box.comm is None and live._text.comm is None  # closed
    count = len(shown)
    live.finish(final)  # twice: nothing more
    assert len(shown) == count


def test_no_widget_without_a_frontend_that_shows_them(monkeypatch):
    display = RunDisplay("r")
    display.bundle = dict(CARD)
    monkeypatch.delenv(WIDGETS_ENV, raising=False)
    assert not widgets_shown()
    # said by jupyter-air's frontend, but no kernel here (a script, a test): still none
    monkeypatch.setenv(WIDGETS_ENV, "1")
    assert not widgets_shown()
    live = start_live(
        display, where="1 rank", tracking_uri=None, run_id="r", cancel={"action": "interrupt"}
    )
    assert live is None


LIVE_CELLS = [
    # what jupyter-air's JupyterLab extension tells a kernel whose notebook shows widgets
    'import os\nos.environ["JUPYTER_AIR_WIDGETS"] = "1"\nfrom jupyter_air import distributed',
    """@distributed(gpus=2)
def train(steps):
    import os, time
    import torch.distributed as dist
    dist.init_process_group()
    if dist.get_rank() == 0:
        import mlflow
        for step in range(steps):
            mlflow.log_metric("train_loss", 1.0 / (step + 1), step=step)
            time.sleep(0.5)
    dist.barrier()
    return dist.get_rank()

print("results", train.distributed(14))""",
]


def test_a_call_in_a_kernel_that_shows_widgets(mlflow_server, monkeypatch, tmp_path):
    """A real kernel told its notebook shows widgets: the call's output is the widget while it
    runs (its state: the status line with the steps read, a chart), and the run
    card — exactly as without widgets — once it ended."""
    import os
    import re
    import sys
    import uuid

    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    use_server(monkeypatch, mlflow_server.url)
    monkeypatch.setenv("JUPYTER_AIR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in LIVE_CELLS]
    km = KernelManager(
        kernel_name="python3", connection_file=str(tmp_path / f"kernel-{uuid.uuid4()}.json")
    )
    client = NotebookClient(nb, km=km, timeout=180, resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    finally:
        if km.has_kernel:
            km.shutdown_kernel(now=True)
    call = nb.cells[1]
    assert "results [0, 1]" in "".join(o.get("text", "") for o in call.outputs)
    (shown,) = [o for o in call.outputs if o.output_type == "display_data"]
    assert set(shown["data"]) == {MIME_TYPE, "text/html", "text/plain"}  # the card alone
    assert shown["data"][MIME_TYPE]["status"] == "FINISHED"
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    statuses = [s["state"]["status"] for s in state.values() if "status" in s["state"]]
    assert len(statuses) == 1 and "2 CPU ranks (gloo)" in statuses[0]
    step = re.search(r"· step (\d+)", statuses[0])  # the metrics were read while it ran
    assert step is not None and int(step.group(1)) >= 1
    # and charted: the figure is the other anywidget model
    assert sum(s["model_name"] == "AnyModel" for s in state.values()) == 2


def test_a_queued_job_run_shows_its_place_and_cancel_until_it_starts(monkeypatch):
    """`%%air_run` of a job run that waits in its queue: a widget says QUEUED, for how long, its
    place and why, with Cancel (the job run's), until its attempt starts; then a line of text
    stays."""
    from jupyter_air.notebook import live_widget

    monkeypatch.setattr(live_widget, "widgets_shown", lambda: True)
    shown: list = []
    live = live_widget.start_queued(
        "3f2a91c0d4e1",
        where="2nd of 3: 2nd in line, behind job run 9b1e04c2aa70 (bob, submitted 14:02)",
        cancel={"action": "cancel-job", "job_id": "3f2a91c0d4e1"},
        publish=lambda bundle, display_id: shown.append((display_id, bundle)),
        show=lambda bundle: "queued-display",
    )
    assert live is not None
    try:
        assert live._text.status.startswith("QUEUED · ")
        assert live._text.status.endswith(
            "· 2nd of 3: 2nd in line, behind job run 9b1e04c2aa70 (bob, submitted 14:02)"
        )
        assert live._text.cancel == {"action": "cancel-job", "job_id": "3f2a91c0d4e1"}
        assert shown[0][0] == "queued-display" and WIDGET_VIEW_MIME in shown[0][1]
        live.set(where="1st of 2: Waiting for 2 nodes with 8 GPU and 1 CPU free; 1 is now")
        assert live._text.status.endswith("· 1st of 2: Waiting for 2 nodes with 8 GPU and 1 CPU "
                                          "free; 1 is now")  # fmt: skip
        assert live.polls == 0  # no run to read while queued
    finally:
        live.finish({"text/plain": "Job run 3f2a91c0d4e1 waited in its queue"})
    assert shown[-1] == (
        "queued-display",
        {"text/plain": "Job run 3f2a91c0d4e1 waited in its queue"},
    )
    monkeypatch.setattr(live_widget, "widgets_shown", lambda: False)
    assert live_widget.start_queued("3f2a91c0d4e1", where="", cancel={}) is None
