"""The run bundle in cell outputs: links under a base URL prefix and with the server's public URL,
hostile names escaped in HTML and raw in JSON, and no links (with the reason) without a UI."""

from __future__ import annotations

import json

import pytest
from mlflow.entities import Run, RunData, RunInfo, RunTag

from jupyter_air.tracking.context import KernelContext
from jupyter_air.tracking.display import MIME_TYPE, format_duration, run_bundle, run_payload
from jupyter_air.tracking.links import TRAINING_VIEW, mlflow_ui

HOSTILE = "<img src=x onerror=alert(1)>"
URI = "http://127.0.0.1:5000"


def make_run(name: str = HOSTILE, status: str = "RUNNING", parent: str | None = None) -> Run:
    tags = [RunTag("mlflow.runName", name)]
    if parent:
        tags.append(RunTag("mlflow.parentRunId", parent))
    info = RunInfo(
        run_id="abc123",
        experiment_id="7",
        user_id="ada",
        status=status,
        start_time=1_764_410_000_000,
        end_time=1_764_410_065_500 if status != "RUNNING" else None,
        lifecycle_stage="active",
        run_name=name,
    )
    return Run(info, RunData(tags=tags))


def context(ui: str | None = "/user/alice/air/mlflow/", **kw) -> KernelContext:
    values = {
        "notebook_path": "exp/train.ipynb",
        "kernel_id": None,
        "user": "alice",
        "tracking_uri": URI,
        "mlflow_ui": ui,
        "base_url": "/user/alice/",
        "server_url": None,
    }
    values.update(kw)
    return KernelContext(**values)


def test_payload_follows_the_contract():
    payload = run_payload(
        make_run(parent="p1"), experiment_name="/Users/ada/llm", tracking_uri=URI, context=context()
    )
    assert payload == {
        "run_id": "abc123",
        "run_name": HOSTILE,
        "status": "RUNNING",
        "experiment_id": "7",
        "experiment_name": "/Users/ada/llm",
        "parent_run_id": "p1",
        "resumed": False,
        "start_time": 1_764_410_000_000,
        "end_time": None,
        "links": {
            "run": "#/experiments/7/runs/abc123" + TRAINING_VIEW,
            "system_metrics": "#/experiments/7/runs/abc123/system-metrics" + TRAINING_VIEW,
            "experiment": "#/experiments/7/runs" + TRAINING_VIEW,
        },
        "ui": "/user/alice/air/mlflow/",
    }
    json.dumps(payload)  # JSON-able as it is


def test_links_under_a_base_url_prefix():
    payload = run_payload(make_run(), experiment_name="e", tracking_uri=URI, context=context())
    bundle = run_bundle(payload)
    html = bundle["text/html"]
    view = TRAINING_VIEW
    assert f'href="/user/alice/air/mlflow/#/experiments/7/runs/abc123{view}"' in html
    assert f'href="/user/alice/air/mlflow/#/experiments/7/runs/abc123/system-metrics{view}"' in html
    assert f'href="/user/alice/air/mlflow/#/experiments/7/runs{view}"' in html
    assert 'target="_blank" rel="noopener noreferrer"' in html
    assert "/user/alice/air/mlflow/#/experiments/7/runs/abc123" in bundle["text/plain"]
    assert bundle[MIME_TYPE] is payload


def test_links_with_the_servers_public_url():
    ctx = context(server_url="https://hub.example.com/user/alice/")
    payload = run_payload(make_run(), experiment_name="e", tracking_uri=URI, context=ctx)
    bundle = run_bundle(payload, server_url=ctx.server_url)
    expected = (
        "https://hub.example.com/user/alice/air/mlflow/#/experiments/7/runs/abc123" + TRAINING_VIEW
    )
    assert f'href="{expected}"' in bundle["text/html"]
    assert expected in bundle["text/plain"]
    assert payload["ui"] == "/user/alice/air/mlflow/"  # the JSON keeps the UI as given


def test_an_external_ui_url_is_linked_as_it_is():
    ctx = context(ui="https://mlflow.example.com", tracking_uri="https://mlflow.example.com")
    payload = run_payload(
        make_run(), experiment_name="e", tracking_uri="https://mlflow.example.com", context=ctx
    )
    bundle = run_bundle(payload, server_url="https://hub.example.com/")
    expected = "https://mlflow.example.com/#/experiments/7/runs/abc123" + TRAINING_VIEW
    assert f'href="{expected}"' in bundle["text/html"]


def test_hostile_names_are_escaped_in_html_and_raw_in_json():
    payload = run_payload(
        make_run(name=HOSTILE, parent='"><script>x</script>'),
        experiment_name=f"/Users/a/{HOSTILE}",
        tracking_uri=URI,
        context=context(),
    )
    bundle = run_bundle(payload)
    html = bundle["text/html"]
    assert "<img" not in html and "<script" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert html.count("&lt;img src=x onerror=alert(1)&gt;") == 2  # run name and experiment
    assert bundle[MIME_TYPE]["run_name"] == HOSTILE
    assert bundle[MIME_TYPE]["experiment_name"] == f"/Users/a/{HOSTILE}"


def test_a_ui_that_is_no_url_gives_no_link():
    payload = run_payload(make_run(), experiment_name="e", tracking_uri=URI, context=context())
    payload["ui"] = "javascript:alert(1)//"
    assert "href" not in run_bundle(payload)["text/html"]


def test_finished_run_shows_its_duration():
    payload = run_payload(
        make_run(status="FINISHED"), experiment_name="e", tracking_uri=URI, context=context()
    )
    assert payload["end_time"] == 1_764_410_065_500
    bundle = run_bundle(payload)
    assert "FINISHED · 1 min 6 s" in bundle["text/html"]
    assert "FINISHED, 1 min 6 s" in bundle["text/plain"]


@pytest.mark.parametrize(
    ("start", "end", "text"),
    [(0, None, None), (0, 2_345, "2.3 s"), (0, 125_000, "2 min 5 s"), (0, 7_500_000, "2 h 5 min")],
)
def test_durations(start, end, text):
    assert format_duration(start, end) == text


def test_no_ui_outside_jupyter_air_says_why():
    ctx = context(ui=None, base_url=None, tracking_uri=None)
    payload = run_payload(make_run(), experiment_name="e", tracking_uri=URI, context=ctx)
    assert payload["ui"] is None
    assert "not started by a Jupyter server running jupyter-air" in payload["no_ui_reason"]
    bundle = run_bundle(payload)
    assert "href" not in bundle["text/html"]
    assert "abc123" in bundle["text/html"] and "No link:" in bundle["text/html"]
    assert "No link: this kernel was not started" in bundle["text/plain"]


def test_no_ui_for_a_store_without_one():
    ctx = context(ui=None, tracking_uri="sqlite:///tmp/x.db")
    ui, reason = mlflow_ui("sqlite:///tmp/x.db", ctx)
    assert ui is None and "has no web UI" in reason


def test_tracking_uri_changed_in_the_kernel():
    ctx = context()
    # a remote server: linked directly
    assert mlflow_ui("https://mlflow.example.com", ctx) == ("https://mlflow.example.com/", None)
    # a local one jupyter-air does not serve: no link, and why
    ui, reason = mlflow_ui("http://user:secret@127.0.0.1:9999", ctx)
    assert ui is None and "is not the one jupyter-air serves" in reason
    assert "secret" not in reason
    assert mlflow_ui(URI + "/", ctx) == ("/user/alice/air/mlflow/", None)
