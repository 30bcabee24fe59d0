"""The workloads REST API on a real Jupyter server, with real job runs (supervisor processes)
and the session's MLflow server: list, read, logs (filters, cursors, long-poll follow, download),
cancel, access control on logs and paths that cannot leave a job's folder."""

from __future__ import annotations

import asyncio
import json
import os
import time

import pytest
from tornado.httpclient import HTTPClientError
from workloads_support import PY, deny_reading, server_config, wait_for

from jupyter_air.workloads import load_spec, submit
from jupyter_air.workloads.connection import Connection
from jupyter_air.workloads.paths import job_dir
from jupyter_air.workloads.store import JobStore

TWO_NODES = f"""
experiment_name: api-tests
mlflow_run_name: two-nodes
compute:
  num_nodes: 2
  accelerator_type: CPU
command: >-
  {PY} -c "import os, sys, time;
  n = os.environ['NODE_RANK'];
  [print(f'node {{n}} step {{i}} <b>html</b>', flush=True) for i in range(5)];
  print('WARNING: node ' + n + ' is slow', file=sys.stderr, flush=True);
  print('ERROR: node ' + n + ' lost a batch', flush=True)"
"""

SLOW = f"""
experiment_name: api-tests
mlflow_run_name: slow
compute: {{accelerator_type: CPU}}
command: >-
  {PY} -c "import time;
  [(print(f'tick {{i}}', flush=True), time.sleep(0.4)) for i in range(200)]"
"""


@pytest.fixture
def air_config(tmp_path) -> dict:
    return server_config(tmp_path / "air")


@pytest.fixture
def server_env(mlflow_env) -> dict[str, str]:
    return {**mlflow_env, "JUPYTER_AIR_KILL_GRACE_S": "3"}


@pytest.fixture
def store(jp_serverapp, tmp_path) -> JobStore:
    return JobStore.for_data_dir(tmp_path / "air")


def start(store: JobStore, text: str, mlflow_server) -> str:
    spec = load_spec(text)
    job = submit(
        spec,
        store=store,
        spec_yaml=text,
        connection=Connection(tracking_uri=mlflow_server.url),
    )
    return job.id


def body(response) -> dict:
    return json.loads(response.body)


async def wait_status(jp_fetch, job_id: str, status: str, timeout: float) -> dict:
    """The job run once ``GET air/api/workloads/{id}`` says ``status``."""
    deadline = time.monotonic() + timeout
    while True:
        job = body(await jp_fetch("air", "api", "workloads", job_id))
        if job["status"] == status:
            return job
        assert time.monotonic() < deadline, f"still {job['status']} after {timeout} s: {job}"
        await asyncio.sleep(0.2)


async def test_list_read_and_logs_of_a_two_node_job(jp_fetch, store, mlflow_server, jp_base_url):
    job_id = start(store, TWO_NODES, mlflow_server)
    await asyncio.get_running_loop().run_in_executor(None, wait_for, store, job_id)

    listing = body(await jp_fetch("air", "api", "workloads"))
    assert listing["total"] == 1
    (job,) = listing["workloads"]
    assert job["id"] == job_id and job["status"] == "SUCCEEDED"
    assert job["links"]["job"] == f"{jp_base_url}lab?air-workload={job_id}"
    assert job["attempts"][0]["links"]["run"].startswith(f"{jp_base_url}air/mlflow/#/experiments/")
    assert (
        body(await jp_fetch("air", "api", "workloads", params={"status": "RUNNING"}))["workloads"]
        == []
    )

    detail = body(await jp_fetch("air", "api", "workloads", job_id))
    assert detail["spec_yaml"] == TWO_NODES
    assert detail["compute"]["num_nodes"] == 2

    node1 = body(await jp_fetch("air", "api", "workloads", job_id, "logs", params={"node": "1"}))
    texts = [line["text"] for line in node1["lines"]]
    assert "node 1 step 0 <b>html</b>" in texts  # stored and served as text
    assert all(line["node"] == 1 for line in node1["lines"])
    assert node1["complete"] is True

    errors = body(
        await jp_fetch("air", "api", "workloads", job_id, "logs", params={"level": "error"})
    )
    assert [line["text"] for line in errors["lines"]] == ["ERROR: node 0 lost a batch"]
    warnings = body(
        await jp_fetch(
            "air", "api", "workloads", job_id, "logs", params={"level": "warning", "node": "1"}
        )
    )
    assert [(line["text"], line["stream"]) for line in warnings["lines"]] == [
        ("WARNING: node 1 is slow", "stderr")
    ]
    search = body(await jp_fetch("air", "api", "workloads", job_id, "logs", params={"q": "STEP 3"}))
    assert [line["text"] for line in search["lines"]] == ["node 0 step 3 <b>html</b>"]
    first_two = body(
        await jp_fetch("air", "api", "workloads", job_id, "logs", params={"limit": "2"})
    )
    rest = body(
        await jp_fetch(
            "air", "api", "workloads", job_id, "logs", params={"after": first_two["next"]}
        )
    )
    assert len(first_two["lines"]) == 2 and first_two["more"] is True
    assert len(first_two["lines"]) + len(rest["lines"]) == 7

    download = await jp_fetch(
        "air", "api", "workloads", job_id, "logs", "download", params={"level": "error,warning"}
    )
    assert download.headers["Content-Disposition"] == (
        f'attachment; filename="{job_id}-attempt1-node0.log"'
    )
    text = download.body.decode()
    assert "ERROR: node 0 lost a batch" in text and "WARNING: node 0 is slow" in text
    assert "step" not in text


async def test_an_mlflow_runs_logs_are_its_attempts(jp_fetch, store, mlflow_server, jp_base_url):
    """The MLflow run page's Logs tab: ``air/api/runs/{run}/logs`` answers with the logs of the
    job run and attempt the run records, with the same query; a run of no job run is a 404."""
    import mlflow

    job_id = start(store, TWO_NODES, mlflow_server)
    job = await asyncio.get_running_loop().run_in_executor(None, wait_for, store, job_id)
    run_id = job.attempts[0].mlflow_run_id
    by_run = body(await jp_fetch("air", "api", "runs", run_id, "logs", params={"node": "1"}))
    by_job = body(await jp_fetch("air", "api", "workloads", job_id, "logs", params={"node": "1"}))
    assert by_run == by_job and by_run["lines"]
    errors = body(
        await jp_fetch("air", "api", "runs", run_id, "logs", params={"level": "error", "q": "lost"})
    )
    assert [line["text"] for line in errors["lines"]] == ["ERROR: node 0 lost a batch"]
    download = await jp_fetch("air", "api", "runs", run_id, "logs", "download")
    assert download.headers["Content-Disposition"] == (
        f'attachment; filename="{job_id}-attempt1-node0.log"'
    )
    assert b"node 0 step 4 <b>html</b>" in download.body

    # the run's description says where its logs are, on any MLflow UI
    note = mlflow.MlflowClient(mlflow_server.url).get_run(run_id).data.tags["mlflow.note.content"]
    assert note == (
        f"Logs of this attempt (job run {job_id}): with `air logs {job_id} --attempt 1`."
    )  # submitted outside a Jupyter server: no link into JupyterLab

    with mlflow.start_run() as plain:  # a run of no job run
        pass
    for parts in (("logs",), ("logs", "download")):
        with pytest.raises(HTTPClientError) as error:
            await jp_fetch("air", "api", "runs", plain.info.run_id, *parts)
        assert error.value.code == 404
        message = json.loads(error.value.response.body)["message"]
        assert message.startswith(f"MLflow run {plain.info.run_id} is not a job run's attempt")
        with pytest.raises(HTTPClientError) as error:  # no token: nothing said of the run
            await jp_fetch("air", "api", "runs", run_id, *parts, headers={"Authorization": ""})
        assert error.value.code == 403


async def follow(jp_fetch, job_id: str, **params: str) -> dict:
    """A long-poll of the job run's logs (``wait``: 20 s)."""
    return body(
        await jp_fetch(
            "air",
            "api",
            "workloads",
            job_id,
            "logs",
            params={**params, "wait": "20"},
            request_timeout=40,
        )
    )


async def test_follow_a_running_job_by_long_poll_then_cancel(jp_fetch, store, mlflow_server):
    job_id = start(store, SLOW, mlflow_server)
    first = await follow(jp_fetch, job_id)
    cursor, seen = first["next"], [line["text"] for line in first["lines"]]
    started = time.monotonic()
    while len(seen) < 3:
        page = await follow(jp_fetch, job_id, after=cursor)
        assert page["complete"] is False
        seen += [line["text"] for line in page["lines"]]
        cursor = page["next"]
        assert time.monotonic() - started < 30
    assert seen[:3] == ["tick 0", "tick 1", "tick 2"]

    # the request is answered at once (202), the job run still stopping; it is followed by GET
    started = time.monotonic()
    asked = await jp_fetch("air", "api", "workloads", job_id, "cancel", method="POST", body=b"")
    assert asked.code == 202 and time.monotonic() - started < 5
    assert body(asked)["cancel_requested"] is True
    job = await wait_status(jp_fetch, job_id, "CANCELLED", 60)
    for attempt in job["attempts"]:
        for node in attempt["nodes"]:
            assert node["pid"] is None or not _alive(node["pid"])
    # following a finished job returns at once, complete
    started = time.monotonic()
    done = await follow(jp_fetch, job_id, after=cursor)
    assert done["complete"] is True and time.monotonic() - started < 5


@pytest.mark.parametrize(
    ("parts", "params", "code", "message"),
    [
        (("..%2F..%2Fetc",), {}, 404, "No workload"),
        (("0123456789ab", "logs"), {}, 404, "No workload"),
        (("0123456789ab", "logs", "download"), {}, 404, "No workload"),
        (("abc",), {}, 404, "No workload"),
    ],
)
async def test_unknown_or_crafted_ids_never_reach_a_file(jp_fetch, parts, params, code, message):
    with pytest.raises(HTTPClientError) as error:
        await jp_fetch("air", "api", "workloads", *parts, params=params)
    assert error.value.code == code
    assert message in json.loads(error.value.response.body)["message"]


async def test_bad_log_filters_are_clear_400s(jp_fetch, store, mlflow_server):
    job_id = start(store, TWO_NODES, mlflow_server)
    await asyncio.get_running_loop().run_in_executor(None, wait_for, store, job_id)
    for params, words in (
        ({"node": "2"}, "has 2 nodes"),
        ({"node": "../../x"}, "'node' must be"),
        ({"attempt": "9"}, "no attempt 9"),
        ({"level": "loud"}, "loud"),
        ({"wait": "999"}, "'wait' must be"),
        ({"after": "1:0:bogus"}, ""),
    ):
        with pytest.raises(HTTPClientError) as error:
            await jp_fetch("air", "api", "workloads", job_id, "logs", params=params)
        assert error.value.code == 400, params
        assert words in json.loads(error.value.response.body)["message"]


async def test_every_endpoint_needs_the_token(jp_fetch):
    for parts in (("workloads",), ("workloads", "0123456789ab", "logs")):
        with pytest.raises(HTTPClientError) as error:
            await jp_fetch("air", "api", *parts, headers={"Authorization": ""})
        assert error.value.code == 403


def _alive(pid: int) -> bool:
    from workloads_support import alive

    return alive(pid)


class DeniedLogs:
    """Tests on a server whose authorizer is ``authorizers.<authorizer>``, with the default grace
    period."""

    authorizer = ""

    @pytest.fixture
    def server_env(self, mlflow_env) -> dict[str, str]:
        return mlflow_env

    @pytest.fixture
    def server_app_config(self) -> dict:
        return {"authorizer_class": f"authorizers.{self.authorizer}"}


class TestLogsAccess(DeniedLogs):
    authorizer = "DenyAirLogs"

    async def test_without_the_logs_permission_the_job_shows_but_its_logs_do_not(
        self, jp_fetch, store, mlflow_server
    ):
        job_id = start(store, TWO_NODES, mlflow_server)
        await asyncio.get_running_loop().run_in_executor(None, wait_for, store, job_id)
        assert body(await jp_fetch("air", "api", "workloads", job_id))["id"] == job_id
        run_id = store.get_job(job_id).attempts[0].mlflow_run_id
        for parts in (
            ("workloads", job_id, "logs"),
            ("workloads", job_id, "logs", "download"),
            ("runs", run_id, "logs"),  # the MLflow run page's Logs tab: the same rule
            ("runs", run_id, "logs", "download"),
        ):
            with pytest.raises(HTTPClientError) as error:
                await jp_fetch("air", "api", *parts)
            assert error.value.code == 403
            message = json.loads(error.value.response.body)["message"]
            assert message.startswith("You don't have access to these logs")
            assert "'air-logs' permission" in message


class TestPerJobAccess(DeniedLogs):
    authorizer = "DenyLogsOfOneWorkload"

    async def test_an_authorizer_can_decide_per_job_run(self, jp_fetch, store, mlflow_server):
        from authorizers import DenyLogsOfOneWorkload

        secret = start(store, TWO_NODES, mlflow_server)
        shared = start(store, TWO_NODES, mlflow_server)
        loop = asyncio.get_running_loop()
        for job_id in (secret, shared):
            await loop.run_in_executor(None, wait_for, store, job_id)
        DenyLogsOfOneWorkload.denied = secret
        try:
            assert body(await jp_fetch("air", "api", "workloads", shared, "logs"))["lines"]
            with pytest.raises(HTTPClientError) as error:
                await jp_fetch("air", "api", "workloads", secret, "logs")
            assert error.value.code == 403
            # by its MLflow run: the job run it records is what the authorizer decides on
            secret_run = store.get_job(secret).attempts[0].mlflow_run_id
            with pytest.raises(HTTPClientError) as error:
                await jp_fetch("air", "api", "runs", secret_run, "logs")
            assert error.value.code == 403
            shared_run = store.get_job(shared).attempts[0].mlflow_run_id
            assert body(await jp_fetch("air", "api", "runs", shared_run, "logs"))["lines"]
        finally:
            DenyLogsOfOneWorkload.denied = None


async def test_kernels_get_the_data_folder_and_retention_not_the_server_process(
    jp_serverapp, tmp_path
):
    from kernel_support import kernel_environ

    env = await kernel_environ(jp_serverapp)
    assert env["JUPYTER_AIR_LOG_RETENTION_DAYS"] == "60"
    assert env["JUPYTER_AIR_DATA_DIR"] == str(tmp_path / "air")
    assert env["PATH"] == os.environ["PATH"]  # the rest is the server's environment
    # given through the kernel manager: the server's own environment is left as it was
    assert "JUPYTER_AIR_DATA_DIR" not in os.environ
    assert "JUPYTER_AIR_LOG_RETENTION_DAYS" not in os.environ


async def test_logs_the_server_may_not_read_are_a_403_that_says_so(
    jp_fetch, store, mlflow_server, monkeypatch
):
    job_id = start(store, TWO_NODES, mlflow_server)
    await asyncio.get_running_loop().run_in_executor(None, wait_for, store, job_id)
    deny_reading(monkeypatch, job_dir(store.data_dir, job_id).resolve())
    for parts in (("logs",), ("logs", "download")):
        with pytest.raises(HTTPClientError) as error:
            await jp_fetch("air", "api", "workloads", job_id, *parts)
        assert error.value.code == 403
        message = json.loads(error.value.response.body)["message"]
        assert message.startswith("You don't have access to these logs: the user this Jupyter")
    # the job run itself stays readable
    assert body(await jp_fetch("air", "api", "workloads", job_id))["id"] == job_id


def test_air_in_a_plain_shell_finds_the_servers_data_folder(jp_serverapp, air_config, monkeypatch):
    """A configured `JupyterAir.data_dir` reaches `air` run from a shell (no JUPYTER_AIR_DATA_DIR):
    the server records it in Jupyter's runtime folder while it runs."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "JUPYTER_AIR_DATA_DIR"}
    env["JUPYTER_RUNTIME_DIR"] = jp_serverapp.runtime_dir
    probe = "from jupyter_air.config import data_dir; print(data_dir())"
    found = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert found.stdout.strip() == air_config["data_dir"], found.stderr
