"""The Jupyter server's own MLflow queries (the Experiment panel's runs and experiments, a run
display's run, ``/health``), through MLflow's REST API with tornado's ``AsyncHTTPClient``: no
thread, an explicit ``Authorization`` header (the embedded server's token, the user's
``MLFLOW_TRACKING_TOKEN`` for their own server, or their name and password on a team server
with MLflow's authentication) and explicit timeouts, so a slow or absent MLflow
costs a pending socket per request, not a thread, and answers within ``request_timeout_s``.

A tracking URI that is not http(s) (``sqlite:``, ``file:``, ``databricks``) has no REST API to
ask: there MLflow's own client answers, on a small executor of its own, and its entities are
turned into the REST API's JSON so that one parser (``mlflow_service.run_summary``) reads both.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

API = "api/2.0/mlflow/"
CONNECT_TIMEOUT_S = 3.0
REQUEST_TIMEOUT_S = 10.0
MAX_CLIENTS = 32  # requests in flight at once; more wait in tornado's queue (timed out there)
CLIENT_WORKERS = 2  # MLflow's own client, for tracking URIs without a REST API
NOT_FOUND = "RESOURCE_DOES_NOT_EXIST"


class MlflowError(Exception):
    """MLflow answered with an error (``code``: MLflow's error code, e.g. NOT_FOUND)."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class MlflowUnreachable(MlflowError):
    """No answer: refused, timed out, or not MLflow's JSON."""


class MlflowRefused(MlflowUnreachable):
    """The server refused our credentials (HTTP 401): the message says who and why."""


@dataclass(eq=False)
class MlflowQueries:
    """MLflow's REST API for one Jupyter server; ``tracking_uri`` and ``authorization`` (the
    header's value) are asked at each call (the embedded server may move to another port);
    ``refused`` says what a 401 means to a person."""

    tracking_uri: Callable[[], str | None]
    authorization: Callable[[], str | None]
    _: KW_ONLY
    refused: Callable[[], str] | None = None
    connect_timeout_s: float = CONNECT_TIMEOUT_S
    request_timeout_s: float = REQUEST_TIMEOUT_S
    _http: AsyncHTTPClient | None = field(default=None, init=False)
    _executor: ThreadPoolExecutor | None = field(default=None, init=False)

    @property
    def uri(self) -> str:
        uri = self.tracking_uri()
        if not uri:
            raise MlflowUnreachable("no tracking server")
        return uri

    @property
    def rest(self) -> bool:
        return self.uri.startswith(("http://", "https://"))

    async def close(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            http.close()
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    # the calls -------------------------------------------------------------------------------
    async def search_experiments(self, max_results: int, order_by: list[str]) -> list[Any]:
        body = {"max_results": max_results, "order_by": order_by}
        answer = await self._call("POST", "experiments/search", body)
        return list(answer.get("experiments", []))

    async def search_runs(
        self, experiment_ids: list[str], filter_string: str, order_by: list[str], max_results: int
    ) -> list[Any]:
        body = {
            "experiment_ids": experiment_ids,
            "filter": filter_string,
            "order_by": order_by,
            "max_results": max_results,
        }
        return list((await self._call("POST", "runs/search", body)).get("runs", []))

    async def get_experiment(self, experiment_id: str) -> Any:
        answer = await self._call("GET", "experiments/get", {"experiment_id": experiment_id})
        return answer["experiment"]

    async def get_experiment_by_name(self, name: str) -> Any | None:
        try:
            answer = await self._call("GET", "experiments/get-by-name", {"experiment_name": name})
        except MlflowError as error:
            if error.code == NOT_FOUND:
                return None
            raise
        return answer["experiment"]

    async def get_run(self, run_id: str) -> Any:
        return (await self._call("GET", "runs/get", {"run_id": run_id}))["run"]

    async def healthy(self, timeout_s: float = 3.0) -> bool:
        """Whether the server answers ``/health`` (a store without a REST API: True)."""
        if not self.rest:
            return True
        try:
            response = await self._fetch("GET", "health", None, timeout_s)
        except MlflowError:
            return False
        return response.code == 200

    # transport -------------------------------------------------------------------------------
    async def _call(self, method: str, endpoint: str, payload: dict[str, Any]) -> Any:
        if not self.rest:
            return await self._client_call(endpoint, payload)
        response = await self._fetch(method, API + endpoint, payload, self.request_timeout_s)
        try:
            return json.loads(response.body or b"{}")
        except ValueError:
            raise MlflowUnreachable(f"{endpoint}: not a JSON answer") from None

    async def _fetch(
        self, method: str, path: str, payload: dict[str, Any] | None, timeout_s: float
    ) -> Any:
        url = self.uri.rstrip("/") + "/" + path
        body = None
        if payload is not None and method == "GET":
            url += "?" + urllib.parse.urlencode(payload)
        elif payload is not None:
            body = json.dumps(payload)
        headers = {"Content-Type": "application/json"}
        authorization = self.authorization()
        if authorization:
            headers["Authorization"] = authorization
        request = HTTPRequest(
            url,
            method=method,
            body=body,
            headers=headers,
            connect_timeout=min(self.connect_timeout_s, timeout_s),
            request_timeout=timeout_s,
            follow_redirects=False,
        )
        if self._http is None:
            self._http = AsyncHTTPClient(force_instance=True, max_clients=MAX_CLIENTS)
        try:
            return await self._http.fetch(request)
        except HTTPClientError as error:
            if error.code == 599 or error.response is None:
                raise MlflowUnreachable(str(error)) from None
            if error.code == 401 and self.refused is not None:
                raise MlflowRefused(self.refused()) from None
            raise _answered_error(error.code, error.response.body) from None
        except (OSError, asyncio.TimeoutError) as error:
            raise MlflowUnreachable(str(error) or type(error).__name__) from None

    async def _client_call(self, endpoint: str, payload: dict[str, Any]) -> Any:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(CLIENT_WORKERS, thread_name_prefix="air-mlflow")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, _with_client, self.uri, endpoint, payload)


def _answered_error(code: int, body: bytes | None) -> MlflowError:
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        data = {}
    if not isinstance(data, dict) or "error_code" not in data:
        return MlflowUnreachable(f"HTTP {code} without MLflow's error")
    return MlflowError(str(data.get("message") or f"HTTP {code}"), str(data["error_code"]))


def _with_client(uri: str, endpoint: str, payload: dict[str, Any]) -> Any:
    """One call by MLflow's own client, answered as the REST API would answer it."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient
    from mlflow.utils.proto_json_utils import message_to_json

    def as_json(entity: Any) -> Any:
        return json.loads(message_to_json(entity.to_proto()))

    client = MlflowClient(tracking_uri=uri)
    try:
        if endpoint == "experiments/search":
            found = client.search_experiments(
                max_results=payload["max_results"], order_by=payload["order_by"]
            )
            return {"experiments": [as_json(e) for e in found]}
        if endpoint == "runs/search":
            runs = client.search_runs(
                payload["experiment_ids"],
                filter_string=payload["filter"],
                order_by=payload["order_by"],
                max_results=payload["max_results"],
            )
            return {"runs": [as_json(r) for r in runs]}
        if endpoint == "experiments/get":
            return {"experiment": as_json(client.get_experiment(payload["experiment_id"]))}
        if endpoint == "experiments/get-by-name":
            experiment = client.get_experiment_by_name(payload["experiment_name"])
            if experiment is None:
                raise MlflowError(f"No experiment {payload['experiment_name']!r}", NOT_FOUND)
            return {"experiment": as_json(experiment)}
        if endpoint == "runs/get":
            return {"run": as_json(client.get_run(payload["run_id"]))}
    except MlflowException as error:
        raise MlflowError(error.message, error.error_code) from None
    except OSError as error:
        raise MlflowUnreachable(str(error)) from None
    raise ValueError(f"no client call for {endpoint}")
