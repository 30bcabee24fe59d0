"""The script of ours on MLflow's pages (the run page's Logs tab): the proxy adds its tag, after
the XSRF script and under the server's base URL (pytest-jupyter's is ``/a%40b/``), to MLflow's
HTML pages only — never to artifacts or MLflow's own scripts — and the server serves the built
script behind Jupyter's login. Against the session's real MLflow server, used as the user's own
(MLFLOW_TRACKING_URI on loopback, proxied)."""

from __future__ import annotations

import uuid

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_air.server.mlflow_page import SCRIPT_FILE, script_tag

TAG = '<script data-jupyter-air="mlflow-page"'


@pytest.fixture
def server_env(mlflow_env) -> dict[str, str]:
    return mlflow_env


def test_the_tag_names_the_script_under_the_base_url():
    assert script_tag('/user/al"ice/') == (
        '<script data-jupyter-air="mlflow-page" src="/user/al&quot;ice/air/static/mlflow-page.js"'
        ' data-base-url="/user/al&quot;ice/" defer></script>'
    )
    assert 'src="/air/static/mlflow-page.js"' in script_tag("/")
    assert 'src="/hub/air/static/mlflow-page.js"' in script_tag("/hub")


async def test_mlflow_pages_get_the_script_after_the_xsrf_one(jp_fetch, jp_base_url):
    page = await jp_fetch("air", "mlflow/", headers={"Accept": "text/html"})
    body = page.body.decode()
    xsrf = body.index('<script data-jupyter-air="xsrf">')
    ours = body.index(TAG)
    mlflows = body.index("<script", ours + 1)  # MLflow's own bundle comes after both
    assert xsrf < ours < mlflows
    assert body.count(TAG) == 1
    tag = body[ours : body.index("</script>", ours)]
    assert f'src="{jp_base_url}air/static/mlflow-page.js"' in tag
    assert f'data-base-url="{jp_base_url}"' in tag
    assert " defer" in tag


async def test_artifacts_and_mlflows_scripts_do_not_get_it(jp_fetch, mlflow_server, tmp_path):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_server.url)
    experiment_id = client.create_experiment(f"page-artifact-{uuid.uuid4().hex[:8]}")
    run_id = client.create_run(experiment_id).info.run_id
    report = tmp_path / "report.html"
    report.write_text("<html><head><title>r</title></head><body>report</body></html>")
    client.log_artifact(run_id, str(report))
    for params in (
        {"path": "report.html", "run_uuid": run_id},
        {"path": "report.html", "run_id": run_id},
    ):
        artifact = await jp_fetch("air", "mlflow", "get-artifact", params=params)
        assert b"report" in artifact.body and b"jupyter-air" not in artifact.body
    page = (await jp_fetch("air", "mlflow/", headers={"Accept": "text/html"})).body.decode()
    bundle = page.split('src="static-files/', 1)[1].split('"', 1)[0]
    script = await jp_fetch("air", "mlflow", "static-files", bundle)
    assert b"data-jupyter-air" not in script.body


async def test_the_script_is_served_behind_the_login(jp_fetch):
    assert SCRIPT_FILE.is_file(), "the MLflow page script is not built: run `jlpm build`"
    response = await jp_fetch("air", "static", "mlflow-page.js")
    assert response.code == 200
    assert response.headers["Content-Type"].startswith("text/javascript")
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.body == SCRIPT_FILE.read_bytes()
    etag = response.headers["Etag"]
    with pytest.raises(HTTPClientError) as again:
        await jp_fetch("air", "static", "mlflow-page.js", headers={"If-None-Match": etag})
    assert again.value.code == 304
    with pytest.raises(HTTPClientError) as anonymous:
        await jp_fetch(
            "air", "static", "mlflow-page.js", headers={"Authorization": ""},
            follow_redirects=False,
        )  # fmt: skip
    assert anonymous.value.code in (302, 403)
    if anonymous.value.code == 302:
        assert "login" in anonymous.value.response.headers["Location"]
