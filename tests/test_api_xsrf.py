"""Every write of jupyter-air's HTTP API is XSRF-checked: for each route the extension
registers and each of POST, PUT, PATCH and DELETE its handler answers, a request with only the
login cookie (what another site's page can make a logged-in browser send) is refused; the same
request with the ``_xsrf`` cookie echoed in ``X-XSRFToken`` (what our pages send) is not refused
for XSRF. A route added later is covered without a test of its own."""

from __future__ import annotations

import re

import pytest
from test_mlflow_proxy import cookie_only, log_in, status_of, with_xsrf_header
from tornado.web import RequestHandler

from jupyter_air.server.gpu_handlers import gpu_handlers
from jupyter_air.server.mlflow_handlers import mlflow_handlers
from jupyter_air.server.workload_handlers import workload_handlers

WRITES = ("post", "put", "patch", "delete")
# authenticated by a node agent's token in the Authorization header, never by a cookie
TOKEN_ONLY = {"TelemetryIngestHandler"}


def routes() -> list[tuple[str, type, str]]:
    found = []
    for pattern, handler in [*gpu_handlers(), *mlflow_handlers(), *workload_handlers()]:
        path = re.sub(r"\((\?P<\w+>)?[^)]*\)", "no-such-id", pattern)  # a value for each group
        for method in WRITES:
            if getattr(handler, method) is not getattr(RequestHandler, method):
                found.append((path, handler, method.upper()))
    return found


def test_the_routes_are_found():
    names = {(handler.__name__, method) for _, handler, method in routes()}
    assert ("ScheduleTriggerHandler", "POST") in names
    assert ("ScheduleHandler", "DELETE") in names
    assert ("WorkloadCancelHandler", "POST") in names
    assert ("MlflowProxyHandler", "PATCH") in names


@pytest.mark.parametrize(
    ("path", "handler", "method"), routes(), ids=lambda v: getattr(v, "__name__", str(v))
)
async def test_a_write_with_only_the_login_cookie_is_refused(jp_fetch, path, handler, method):
    browser = await log_in(jp_fetch)
    parts = path.strip("/").split("/")
    body = "{}" if method != "DELETE" else None
    json_type = {"Content-Type": "application/json"}
    refused = await status_of(
        jp_fetch, *parts, method=method, body=body, headers=cookie_only(browser, **json_type)
    )
    if handler.__name__ in TOKEN_ONLY:
        assert refused in (401, 403), (method, path)
        return
    assert refused == 403, (method, path)
    checked = await status_of(
        jp_fetch, *parts, method=method, body=body, headers=with_xsrf_header(browser, **json_type)
    )
    assert checked != 403, (method, path, "refused with the XSRF header too")
