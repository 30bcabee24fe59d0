"""The embedded MLflow server relayed on another address (mlflow_server/relay.py): the relay
only carries bytes, so the server's token is still required for everything."""

from __future__ import annotations

import urllib.parse

from jupyter_air.mlflow_server.relay import Relay
from jupyter_air.tracking.readiness import health


def test_the_relay_answers_only_with_the_token(mlflow_server) -> None:
    port = urllib.parse.urlparse(mlflow_server.url).port
    assert port is not None
    relay = Relay("127.0.0.1", port).start()
    try:
        assert health(relay.url, 10.0, mlflow_server.token) == 200
        assert health(relay.url, 10.0, "") == 401  # nothing without the server's token
        assert health(relay.url, 10.0, "not-the-token") == 401
    finally:
        relay.close()
    assert health(relay.url, 2.0, mlflow_server.token) != 200  # closed: nothing listens


def test_the_nodes_token_opens_the_attempts_run_only_until_the_relay_closes(
    mlflow_server, monkeypatch, tmp_path
) -> None:
    """What the relay offers nodes on other hosts: a token of one run. With it they log
    metrics, params, tags and artifacts to that run and read it; another run, a search, a new
    run or a deletion is refused (403); once the relay closes the token opens nothing."""
    import pytest
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    data = tmp_path / "data"
    data.mkdir()
    (data / "mlflow").symlink_to(mlflow_server.files.folder)  # this data folder's server
    monkeypatch.setenv("JUPYTER_AIR_DATA_DIR", str(data))
    owner = MlflowClient(mlflow_server.url)
    experiment = owner.create_experiment(f"scoped-{tmp_path.name}")
    mine, other = (owner.create_run(experiment).info.run_id for _ in range(2))
    port = urllib.parse.urlparse(mlflow_server.url).port
    assert port is not None
    relay = Relay("127.0.0.1", port).start()
    env = {
        "MLFLOW_RUN_ID": mine,
        "MLFLOW_EXPERIMENT_ID": experiment,
        "MLFLOW_TRACKING_TOKEN": mlflow_server.token,
    }
    offered = relay.offer(env)
    token = offered["MLFLOW_TRACKING_TOKEN"]
    assert offered["MLFLOW_TRACKING_URI"] == relay.url and token != mlflow_server.token
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", token)
    node = MlflowClient(relay.url)
    try:
        node.log_metric(mine, "loss", 0.5)
        node.log_param(mine, "lr", "0.1")
        node.set_tag(mine, "stage", "train")
        (tmp_path / "model.pt").write_bytes(b"weights" * 1000)
        node.log_artifact(mine, str(tmp_path / "model.pt"), "checkpoints")
        run = node.get_run(mine)
        assert run.data.metrics == {"loss": 0.5} and run.data.params == {"lr": "0.1"}
        assert [f.path for f in node.list_artifacts(mine, "checkpoints")] == [
            "checkpoints/model.pt"
        ]
        for refused in (
            lambda: node.get_run(other),
            lambda: node.log_metric(other, "loss", 1.0),
            lambda: node.search_runs([experiment]),
            lambda: node.create_run(experiment),
            lambda: node.delete_run(mine),
        ):
            with pytest.raises(MlflowException, match=r"opens run \w+ only"):
                refused()
        import http.client

        sideways = f"{mine}/artifacts/../../{other}/artifacts/x.txt"  # out of its own folder
        connection = http.client.HTTPConnection("127.0.0.1", relay.port, timeout=30)
        connection.request(  # sent as written: no client folds the dots away
            "PUT",
            f"/api/2.0/mlflow-artifacts/artifacts/{experiment}/{sideways}",
            body=b"x",
            headers={"Authorization": f"Bearer {token}"},
        )
        answer = connection.getresponse()
        assert answer.status == 403 and b"leaves its folder" in answer.read()
        connection.close()
    finally:
        relay.close()
    direct = MlflowClient(mlflow_server.url)  # the token, straight to the server: revoked
    with pytest.raises(MlflowException, match=r"UNAUTHENTICATED|401"):
        direct.get_run(mine)
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", mlflow_server.token)
    assert owner.get_run(mine).data.tags["stage"] == "train"
