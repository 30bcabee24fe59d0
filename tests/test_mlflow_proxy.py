"""Writes through the MLflow UI proxy (``air/mlflow/``) pass Jupyter's own XSRF check, as on any
Jupyter API: with only the login cookie (a request another site can make the browser send) a
POST, PUT, PATCH or DELETE is refused and changes nothing; with the ``_xsrf`` cookie echoed in
``X-XSRFToken`` (what MLflow's pages send, from the script the proxy gives them) or with
Jupyter's token it is forwarded, DELETE with a JSON body included. Against the session's real
MLflow server, used as the user's own (MLFLOW_TRACKING_URI on loopback, proxied)."""

from __future__ import annotations

import json
import uuid
from http.cookies import SimpleCookie

import pytest
from tornado.httpclient import AsyncHTTPClient, HTTPClientError

EVIL = "http://evil.example"


@pytest.fixture
def server_env(mlflow_env) -> dict[str, str]:
    return mlflow_env


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def set_cookies(response) -> SimpleCookie:
    cookies: SimpleCookie = SimpleCookie()
    for header in response.headers.get_list("Set-Cookie"):
        cookies.load(header)
    return cookies


async def log_in(jp_fetch) -> dict:
    """What a logged-in browser holds: Jupyter's login cookie (set on a token-authenticated
    request, as after /login?token=…), and the `_xsrf` cookie (set by any Jupyter page)."""
    cookies = set_cookies(await jp_fetch("api", "status"))
    (login,) = [name for name in cookies if name.startswith("username-")]
    login_page = await jp_fetch("login", headers={"Authorization": ""})
    xsrf = set_cookies(login_page)["_xsrf"].value
    return {"login": f"{login}={cookies[login].value}", "xsrf": xsrf}


def cookie_only(browser: dict, **extra: str) -> dict[str, str]:
    """The headers of a request another site's page makes the browser send: the cookies, not
    the XSRF header (it cannot read the cookie to echo it)."""
    return {"Authorization": "", "Cookie": browser["login"], **extra}


def with_xsrf_header(browser: dict, **extra: str) -> dict[str, str]:
    cookies = f"{browser['login']}; _xsrf={browser['xsrf']}"
    return {"Authorization": "", "Cookie": cookies, "X-XSRFToken": browser["xsrf"], **extra}


async def status_of(jp_fetch, *parts: str, **kwargs) -> int:
    try:
        response = await jp_fetch(*parts, allow_nonstandard_methods=True, **kwargs)
    except HTTPClientError as error:
        return error.code
    return response.code


async def status_of_json(jp_fetch, path: str, method: str, payload: dict, headers: dict) -> int:
    """The status of a request to ``path`` whose body is ``payload`` in JSON."""
    return await status_of(
        jp_fetch,
        path,
        method=method,
        body=json.dumps(payload),
        headers={**headers, "Content-Type": "application/json"},
    )


def experiment_exists(mlflow_client, name: str) -> bool:
    return mlflow_client.get_experiment_by_name(name) is not None


def model_exists(mlflow_client, name: str) -> bool:
    from mlflow.exceptions import MlflowException

    try:
        mlflow_client.get_registered_model(name)
    except MlflowException:
        return False
    return True


def artifact_names(mlflow_client, run_id: str) -> list[str]:
    return [a.path for a in mlflow_client.list_artifacts(run_id)]


# what a cross-site page can make a logged-in browser send ---------------------------------------
@pytest.mark.parametrize("origin", [None, EVIL])
async def test_cookie_only_writes_are_refused_and_change_nothing(jp_fetch, mlflow_client, origin):
    browser = await log_in(jp_fetch)
    extra = {"Origin": origin} if origin else {}
    headers = cookie_only(browser, **extra)
    # what Jupyter's own API answers to the same request
    refused = await status_of(
        jp_fetch, "air", "api", "gpu", "refresh", method="POST", body="", headers=headers
    )
    assert refused in (403, 404)

    name = unique("xsrf-created")
    assert (
        await status_of_json(
            jp_fetch,
            "air/mlflow/api/2.0/mlflow/experiments/create",
            "POST",
            {"name": name},
            headers,
        )
        == refused
    )
    assert not experiment_exists(mlflow_client, name)

    experiment_id = mlflow_client.create_experiment(unique("xsrf-target"))
    run_id = mlflow_client.create_run(experiment_id).info.run_id
    # a form-style upload (text/plain needs no CORS preflight)
    assert (
        await status_of(
            jp_fetch,
            "air/mlflow/ajax-api/2.0/mlflow/upload-artifact",
            params={"run_uuid": run_id, "path": "x.html"},
            method="POST",
            body="<script>alert(1)</script>",
            headers={**headers, "Content-Type": "text/plain"},
        )
        == refused
    )
    assert (
        await status_of(
            jp_fetch,
            f"air/mlflow/api/2.0/mlflow-artifacts/artifacts/{experiment_id}/{run_id}"
            "/artifacts/put.txt",
            method="PUT",
            body="put",
            headers=headers,
        )
        == refused
    )
    assert artifact_names(mlflow_client, run_id) == []

    model = unique("xsrf-model")
    mlflow_client.create_registered_model(model)
    assert (
        await status_of_json(
            jp_fetch,
            "air/mlflow/ajax-api/2.0/mlflow/registered-models/delete",
            "DELETE",
            {"name": model},
            headers,
        )
        == refused
    )
    assert model_exists(mlflow_client, model)

    assert (
        await status_of_json(
            jp_fetch,
            "air/mlflow/ajax-api/2.0/mlflow/registered-models/update",
            "PATCH",
            {"name": model, "description": "changed"},
            headers,
        )
        == refused
    )
    assert mlflow_client.get_registered_model(model).description in ("", None)


async def test_a_cookie_xsrf_token_that_does_not_match_is_refused(jp_fetch, mlflow_client):
    browser = await log_in(jp_fetch)
    name = unique("xsrf-mismatch")
    headers = with_xsrf_header(browser, **{"Content-Type": "application/json"})
    headers["X-XSRFToken"] = "2|00000000|" + "0" * 32 + "|1700000000"
    code = await status_of_json(
        jp_fetch,
        "air/mlflow/ajax-api/2.0/mlflow/experiments/create",
        "POST",
        {"name": name},
        headers,
    )
    assert code == 403
    assert not experiment_exists(mlflow_client, name)


# what MLflow's own page sends, and what scripts with the token send ---------------------------
@pytest.mark.parametrize("credentials", ["xsrf header", "token"])
async def test_writes_with_the_xsrf_header_or_the_token_are_forwarded(
    jp_fetch, mlflow_client, credentials
):
    browser = await log_in(jp_fetch)
    headers = with_xsrf_header(browser) if credentials == "xsrf header" else {}

    name = unique("xsrf-ok")
    created = await jp_fetch(
        "air/mlflow/ajax-api/2.0/mlflow/experiments/create",
        method="POST",
        body=json.dumps({"name": name}),
        headers={**headers, "Content-Type": "application/json"},
    )
    experiment_id = json.loads(created.body)["experiment_id"]
    assert mlflow_client.get_experiment(experiment_id).name == name

    run_id = mlflow_client.create_run(experiment_id).info.run_id
    await jp_fetch(
        f"air/mlflow/api/2.0/mlflow-artifacts/artifacts/{experiment_id}/{run_id}/artifacts/put.txt",
        method="PUT",
        body="put",
        headers=headers,
    )
    assert artifact_names(mlflow_client, run_id) == ["put.txt"]

    # DELETE with a JSON body, as MLflow's UI sends it
    model = unique("xsrf-model")
    mlflow_client.create_registered_model(model)
    deleted = await jp_fetch(
        "air/mlflow/ajax-api/2.0/mlflow/registered-models/delete",
        method="DELETE",
        body=json.dumps({"name": model}),
        headers={**headers, "Content-Type": "application/json"},
        allow_nonstandard_methods=True,
    )
    assert deleted.code == 200
    assert not model_exists(mlflow_client, model)


# the page that makes MLflow's UI send the header ----------------------------------------------
async def test_mlflow_pages_get_the_xsrf_script_and_cookie_artifacts_do_not(
    jp_fetch, mlflow_client, mlflow_server, tmp_path
):
    browser = await log_in(jp_fetch)
    # a browser without the `_xsrf` cookie (MLflow opened first, with the token) is given one
    page = await jp_fetch(
        "air",
        "mlflow/",
        headers={"Authorization": "", "Cookie": browser["login"], "Accept": "text/html"},
    )
    assert set_cookies(page)["_xsrf"].value
    body = page.body.decode()
    ours = body.index('<script data-jupyter-air="xsrf">')
    assert body.lower().index("<head") < ours == body.index("<script")  # before MLflow's
    assert body.count("<script") > 1
    assert body.count('data-jupyter-air="xsrf"') == 1
    assert "X-XSRFToken" in body and "Content-Encoding" not in page.headers
    # a browser that has the cookie keeps it
    again = await jp_fetch(
        "air",
        "mlflow/",
        headers={
            "Authorization": "",
            "Cookie": f"{browser['login']}; _xsrf={browser['xsrf']}",
            "Accept": "text/html",
            "Accept-Encoding": "gzip",
        },
    )
    assert "_xsrf" not in set_cookies(again)
    assert 'data-jupyter-air="xsrf"' in again.body.decode()
    assert again.headers["Cache-Control"] == "no-store"

    # a page cached before (MLflow's own file, its validators) is served again, not a 304
    original = await AsyncHTTPClient().fetch(
        mlflow_server.url + "/", headers={"Authorization": f"Bearer {mlflow_server.token}"}
    )
    assert "<script data-jupyter-air" not in original.body.decode()
    assert again.headers.get("Etag") != original.headers["Etag"]
    cached = await jp_fetch(
        "air",
        "mlflow/",
        headers={
            "Accept": "text/html",
            "If-None-Match": original.headers["Etag"],
            "If-Modified-Since": original.headers["Last-Modified"],
        },
    )
    assert cached.code == 200 and 'data-jupyter-air="xsrf"' in cached.body.decode()

    experiment_id = mlflow_client.create_experiment(unique("xsrf-artifact"))
    run_id = mlflow_client.create_run(experiment_id).info.run_id
    report = tmp_path / "report.html"
    report.write_text("<html><head><title>r</title></head><body>report</body></html>")
    mlflow_client.log_artifact(run_id, str(report))
    artifact = await jp_fetch(
        "air", "mlflow", "get-artifact", params={"path": "report.html", "run_uuid": run_id}
    )
    assert b"report" in artifact.body and b"jupyter-air" not in artifact.body
