"""A JupyterHub user's server reached by another user (JupyterHub's sharing): alice owns the
server and its data folder; bob sees none of her job runs, logs (the Logs view's and the MLflow
run page's Logs tab's) or schedules, and cannot cancel, until she runs ``air share job ID --with
bob``; then he sees that job run and reads its logs, and only that one; ``--remove`` takes it
back. A real Jupyter server with real job runs."""

from __future__ import annotations

import asyncio
import json

import pytest
from tornado.httpclient import HTTPClientError
from workloads_support import PY, air, server_config, wait_for

from jupyter_air.workloads import load_spec, submit
from jupyter_air.workloads.connection import Connection
from jupyter_air.workloads.store import JobStore

ALICE = {"Authorization": "token alice-token-4f1c"}
BOB = {"Authorization": "token bob-token-9e2d"}
JOB = f"""
experiment_name: sharing-tests
compute: {{accelerator_type: CPU}}
command: {PY} -c "print('secret step 1', flush=True)"
"""


@pytest.fixture
def air_config(tmp_path) -> dict:
    return server_config(tmp_path / "air")


@pytest.fixture
def server_env(mlflow_env, air_config) -> dict[str, str]:
    return {
        **mlflow_env,
        "JUPYTERHUB_USER": "alice",  # alice's server, under JupyterHub
        "JUPYTERHUB_API_TOKEN": "a-token-of-the-hub",
        "JUPYTER_AIR_DATA_DIR": air_config["data_dir"],  # her `air` too
    }


@pytest.fixture
def server_app_config() -> dict:
    return {"identity_provider_class": "authorizers.TwoUsers"}


async def as_user(jp_fetch, headers: dict, *parts: str, **kwargs) -> tuple[int, dict | str]:
    try:
        response = await jp_fetch("air", "api", *parts, headers=headers, **kwargs)
    except HTTPClientError as error:
        return error.code, json.loads(error.response.body)["message"]
    text = response.body.decode()
    return response.code, json.loads(text) if text.startswith("{") else text


async def test_bob_reaches_alices_job_run_and_its_logs_only_once_shared(
    jp_fetch, jp_serverapp, tmp_path, mlflow_server
):
    store = JobStore.for_data_dir(tmp_path / "air")
    loop = asyncio.get_running_loop()
    ids = []
    for _ in range(2):
        job = submit(load_spec(JOB), store=store, spec_yaml=JOB,
                     connection=Connection(tracking_uri=mlflow_server.url))  # fmt: skip
        ids.append(job.id)
    for job_id in ids:
        assert (await loop.run_in_executor(None, wait_for, store, job_id)).status == "SUCCEEDED"
    shared, private = ids
    run_id = store.get_job(shared).attempts[0].mlflow_run_id

    code, page = await as_user(jp_fetch, ALICE, "workloads", params={"status": "SUCCEEDED"})
    assert code == 200 and {w["id"] for w in page["workloads"]} == set(ids)  # hers: all
    code, page = await as_user(jp_fetch, BOB, "workloads")
    assert code == 200 and (page["workloads"], page["total"]) == ([], 0)
    reads = [("workloads", shared), ("workloads", shared, "logs"),
             ("workloads", shared, "logs", "download"), ("runs", run_id, "logs")]  # fmt: skip
    for parts in reads:
        code, message = await as_user(jp_fetch, BOB, *parts)
        assert code == 403, parts
        assert message.startswith("You don't have access to th"), message
        assert "secret" not in message
    code, message = await as_user(jp_fetch, BOB, "workloads", shared)
    assert message.startswith("You don't have access to this job run: it is alice's")
    assert f"air share job {shared} --with bob" in message

    # alice shares one of her job runs with bob
    said = air("share", "job", shared, "--with", "bob")
    assert said.returncode == 0, said.stderr
    assert f"Job run {shared} shared with bob." in said.stdout
    code, page = await as_user(jp_fetch, BOB, "workloads", params={"status": "SUCCEEDED"})
    assert [w["id"] for w in page["workloads"]] == [shared] and page["total"] == 1
    for parts in reads:
        code, answer = await as_user(jp_fetch, BOB, *parts)
        assert code == 200, (parts, answer)
    code, logs = await as_user(jp_fetch, BOB, "workloads", shared, "logs")
    assert [line["text"] for line in logs["lines"]] == ["secret step 1"]
    code, message = await as_user(jp_fetch, BOB, "workloads", private, "logs")
    assert code == 403  # only what was shared
    code, message = await as_user(jp_fetch, BOB, "workloads", shared, "cancel", method="POST",
                                  body=b"")  # fmt: skip
    assert (code, message) == (403, "Only alice can cancel job runs on this server: it is theirs.")
    code, message = await as_user(jp_fetch, BOB, "schedules")
    assert code == 403 and message.startswith("Only alice can see and change the schedules")
    assert (await as_user(jp_fetch, ALICE, "schedules"))[0] == 200

    # and takes it back
    assert air("share", "job", shared, "--with", "bob", "--remove").returncode == 0
    assert (await as_user(jp_fetch, BOB, "workloads", shared, "logs"))[0] == 403
    listed = json.loads(air("share", "job", shared, "-o", "json").stdout)
    assert listed == {"id": shared, "shared_with": []}


def test_a_server_is_someones_only_when_the_hub_started_it(monkeypatch):
    from jupyter_air.tracking.naming import server_owner

    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    monkeypatch.delenv("JUPYTERHUB_API_TOKEN", raising=False)
    assert server_owner() is None  # set by hand or an image: whoever is let in owns it
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "a-token-of-the-hub")
    assert server_owner() == "alice"
