"""MLflow's REST API for the processes that must start fast: a workload's supervisor, ``air run``,
the reconcile pass. ``import mlflow`` costs 1.5 CPU seconds (it loads pandas, fastapi and its
GenAI modules), paid by every job run and every submission for a handful of calls: experiments,
runs, tags, their end, and artifacts. ``RestClient`` makes those calls over HTTP(S) with MLflow's
own rules, read at each call as MLflow's client reads them:

- credentials: ``MLFLOW_TRACKING_TOKEN`` (a bearer token), else the user's name and password
  (``MLFLOW_TRACKING_USERNAME``/``PASSWORD`` or the credentials file, ``identity``);
- TLS: ``MLFLOW_TRACKING_INSECURE_TLS``, ``MLFLOW_TRACKING_SERVER_CERT_PATH``,
  ``MLFLOW_TRACKING_CLIENT_CERT_PATH``;
- retries: ``MLFLOW_HTTP_REQUEST_MAX_RETRIES`` (7), ``MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR`` (2) and
  ``MLFLOW_HTTP_REQUEST_TIMEOUT`` (120 s) on no answer and on 408, 429 and 5xx;
- artifacts: ``mlflow-artifacts:`` URIs are PUT to the server's artifact proxy, a local artifact
  root is copied to, anything else (s3:, gs:…) goes through MLflow's own artifact repository.

``client_for(uri)`` gives this client where it applies and MLflow's ``MlflowClient`` elsewhere
(a ``file:`` or ``sqlite:`` URI, Databricks, AWS SigV4 or a custom auth plugin). The entities it
returns carry the attributes of MLflow's that jupyter-air reads (``run.info.run_id``,
``run.data.tags``, ``experiment.lifecycle_stage``…).
"""

from __future__ import annotations

import json
import mimetypes
import os
import posixpath
import random
import shutil
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .identity import Credentials, refused_message, user_credentials
from .links import redacted
from .rest_entities import Answer, Experiment, Metric, Run, parse_json

__all__ = ["Answer", "Experiment", "Metric", "RestClient", "RestError", "Run", "client_for"]

API = "api/2.0/mlflow/"
ARTIFACTS_API = "api/2.0/mlflow-artifacts/artifacts"
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
BACKOFF_MAX_S = 120.0
# what only MLflow's client knows how to send
MLFLOW_ONLY_AUTH = ("MLFLOW_TRACKING_AWS_SIGV4", "MLFLOW_TRACKING_AUTH")


class RestError(Exception):
    """MLflow answered with an error, or did not answer (``status`` 0). ``error_code`` is
    MLflow's (``RESOURCE_DOES_NOT_EXIST``…), as on ``MlflowException``."""

    def __init__(self, message: str, error_code: str = "INTERNAL_ERROR", status: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.error_code = error_code
        self.status = status


def tracking_errors() -> tuple[type[Exception], ...]:
    """What a tracking call raises: ``RestError``, and ``MlflowException`` once MLflow's client
    is loaded (never imported for this)."""
    exceptions = sys.modules.get("mlflow.exceptions")
    mlflow_error = getattr(exceptions, "MlflowException", None) if exceptions else None
    return (RestError, mlflow_error) if mlflow_error else (RestError,)


# the client -----------------------------------------------------------------------------------
class RestClient:
    """The calls of ``MlflowClient`` that jupyter-air makes, over MLflow's REST API.
    ``credentials``: these instead of the environment's (a user sharing an experiment)."""

    def __init__(
        self,
        tracking_uri: str,
        *,
        credentials: Credentials | None = None,
        retries: int | None = None,
        timeout_s: float | None = None,
    ) -> None:
        self.tracking_uri = tracking_uri
        self.base = tracking_uri.rstrip("/") + "/"
        self.shown = redacted(tracking_uri)
        self.credentials = credentials
        self.retries = retries  # None: MLflow's variables decide, at each call
        self.timeout_s = timeout_s

    # experiments
    def get_experiment_by_name(self, name: str) -> Experiment | None:
        answer = self.request("GET", API + "experiments/get-by-name", {"experiment_name": name})
        if answer.code == "RESOURCE_DOES_NOT_EXIST":
            return None
        return Experiment.from_json(self._ok(answer, f"finding experiment {name!r}")["experiment"])

    def get_experiment(self, experiment_id: str) -> Experiment:
        answer = self.request("GET", API + "experiments/get", {"experiment_id": experiment_id})
        body = self._ok(answer, f"reading experiment {experiment_id}")
        return Experiment.from_json(body["experiment"])

    def create_experiment(
        self,
        name: str,
        artifact_location: str | None = None,
        tags: Mapping[str, Any] | None = None,
    ) -> str:
        payload: dict[str, Any] = {"name": name, "tags": _tag_list(tags)}
        if artifact_location:
            payload["artifact_location"] = artifact_location
        answer = self.request("POST", API + "experiments/create", payload)
        return str(self._ok(answer, f"creating experiment {name!r}")["experiment_id"])

    # runs
    def create_run(
        self,
        experiment_id: str,
        start_time: int | None = None,
        tags: Mapping[str, Any] | None = None,
        run_name: str | None = None,
    ) -> Run:
        tags = dict(tags or {})
        payload: dict[str, Any] = {
            "experiment_id": str(experiment_id),
            "start_time": start_time if start_time is not None else int(time.time() * 1000),
            "tags": _tag_list(tags),
        }
        payload["user_id"] = str(tags.get("mlflow.user") or "unknown")  # as MLflow's client
        if run_name:
            payload["run_name"] = run_name
        answer = self.request("POST", API + "runs/create", payload)
        return Run.from_json(self._ok(answer, "creating a run")["run"])

    def get_run(self, run_id: str) -> Run:
        answer = self.request("GET", API + "runs/get", {"run_id": run_id})
        return Run.from_json(self._ok(answer, f"reading run {run_id}")["run"])

    def update_run(
        self,
        run_id: str,
        status: str | None = None,
        name: str | None = None,
        end_time: int | None = None,
    ) -> None:
        payload: dict[str, Any] = {"run_id": run_id}
        if status is not None:
            payload["status"] = status
        if name is not None:
            payload["run_name"] = name
        if end_time is not None:
            payload["end_time"] = end_time
        self._ok(self.request("POST", API + "runs/update", payload), f"updating run {run_id}")

    def set_terminated(
        self, run_id: str, status: str | None = None, end_time: int | None = None
    ) -> None:
        ended = end_time if end_time is not None else int(time.time() * 1000)
        self.update_run(run_id, status=status or "FINISHED", end_time=ended)

    def get_metric_history(self, run_id: str, key: str) -> list[Metric]:
        """Every value of metric ``key`` in the run (the first 25,000: enough for a step)."""
        query = {"run_id": run_id, "metric_key": key, "max_results": 25000}
        body = self._ok(self.request("GET", API + "metrics/get-history", query), f"reading {key}")
        return [Metric.from_json(m) for m in body.get("metrics") or []]

    def set_tag(self, run_id: str, key: str, value: Any) -> None:
        payload = {"run_id": run_id, "key": key, "value": str(value)}
        self._ok(self.request("POST", API + "runs/set-tag", payload), f"tagging run {run_id}")

    def log_batch(
        self, run_id: str, metrics: Iterable[Any] = (), params: Iterable[Any] = (),
        tags: Iterable[Any] = (),
    ) -> None:  # fmt: skip
        """Entities with ``key`` and ``value`` (and ``timestamp``, ``step`` for metrics)."""
        payload = {
            "run_id": run_id,
            "metrics": [
                {"key": m.key, "value": m.value, "timestamp": m.timestamp, "step": m.step or 0}
                for m in metrics
            ],
            "params": [{"key": p.key, "value": str(p.value)} for p in params],
            "tags": [{"key": t.key, "value": str(t.value)} for t in tags],
        }
        self._ok(self.request("POST", API + "runs/log-batch", payload), f"logging to run {run_id}")

    # artifacts
    def log_artifact(self, run_id: str, local_path: str, artifact_path: str | None = None) -> None:
        """Upload one file to the run's artifacts, under ``artifact_path``."""
        root = self.get_run(run_id).info.artifact_uri
        self._artifacts(root, run_id).put(Path(local_path), artifact_path)

    def log_artifacts(self, run_id: str, local_dir: str, artifact_path: str | None = None) -> None:
        """Upload every file under ``local_dir`` (its folders kept) under ``artifact_path``."""
        root = self.get_run(run_id).info.artifact_uri
        store = self._artifacts(root, run_id)
        top = Path(local_dir).resolve()
        for folder, _, names in os.walk(top):
            relative = Path(folder).relative_to(top).as_posix()
            parts = [p for p in (artifact_path, relative if relative != "." else None) if p]
            for name in sorted(names):
                store.put(Path(folder) / name, posixpath.join(*parts) if parts else None)

    def _artifacts(self, root: str, run_id: str) -> _Artifacts:
        parsed = urllib.parse.urlparse(root)
        if parsed.scheme == "mlflow-artifacts":
            return _ProxiedArtifacts(self, root)
        if parsed.scheme in ("", "file"):
            path = urllib.parse.unquote(parsed.path) if parsed.scheme == "file" else root
            return _LocalArtifacts(Path(path))
        return _MlflowArtifacts(self.tracking_uri, run_id)

    # the wire
    def request(
        self,
        method: str,
        path: str,
        payload: Mapping[str, Any] | None = None,
        *,
        data: bytes | None = None,
        content_type: str = "application/json",
        base: str | None = None,
    ) -> Answer:
        """One call (retried as MLflow's client retries); an answer whatever its status, a
        ``RestError`` when there was none. ``base``: another server than the tracking URI's."""
        url = (base or self.base) + path
        if payload is not None and method == "GET":
            url += "?" + urllib.parse.urlencode(payload)
        elif payload is not None:
            data = json.dumps(payload).encode()
        retries = self.retries
        if retries is None:
            retries = _env_int("MLFLOW_HTTP_REQUEST_MAX_RETRIES", 7)
        backoff = _env_float("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", 2.0)
        timeout = self.timeout_s or _env_float("MLFLOW_HTTP_REQUEST_TIMEOUT", 120.0)
        for attempt in range(retries + 1):
            request = urllib.request.Request(url, data=data, method=method)
            for name, value in self._headers(content_type).items():
                request.add_header(name, value)
            try:
                with urllib.request.urlopen(request, timeout=timeout, context=_tls()) as answer:
                    return Answer(int(answer.status), parse_json(answer.read()))
            except urllib.error.HTTPError as error:
                answer = Answer(int(error.code), parse_json(error.read()))
                if error.code not in RETRY_STATUSES or attempt == retries:
                    return answer
                reason = f"HTTP {error.code}"
            except (urllib.error.URLError, OSError, ValueError) as error:
                reason = str(getattr(error, "reason", None) or error)
                if attempt == retries:
                    raise RestError(
                        f"MLflow at {self.shown} did not answer: {reason}",
                        "TEMPORARILY_UNAVAILABLE",
                    ) from None
            # urllib3's rule, as MLflow's client uses it: at once, then factor * 2^n, jittered
            if attempt:
                time.sleep(min(BACKOFF_MAX_S, backoff * 2**attempt) + random.random())
        raise AssertionError(reason)  # the loop returns or raises

    def _headers(self, content_type: str) -> dict[str, str]:
        headers = {"Content-Type": content_type, "User-Agent": "jupyter-air"}
        token = os.environ.get("MLFLOW_TRACKING_TOKEN")
        credentials = self.credentials
        if credentials is None and not token:
            credentials = user_credentials()
        if credentials is not None:
            headers["Authorization"] = credentials.authorization()
        elif token:
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def _ok(self, answer: Answer, what: str) -> dict[str, Any]:
        if answer.status == 200:
            return answer.body
        message = answer.message or f"HTTP {answer.status}"
        credentials = self.credentials or user_credentials()
        if answer.status == 401 and credentials is not None:
            message = refused_message(self.shown, credentials.username)
        raise RestError(
            f"{what[0].upper()}{what[1:]} on MLflow at {self.shown}: {message}",
            answer.code or _code_of(answer.status),
            answer.status,
        )


def client_for(tracking_uri: str) -> Any:
    """``RestClient`` for an http(s) tracking server, MLflow's ``MlflowClient`` for the rest."""
    http = tracking_uri.startswith(("http://", "https://"))
    if http and not any(os.environ.get(name) for name in MLFLOW_ONLY_AUTH):
        return RestClient(tracking_uri)
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=tracking_uri or None)


# artifact stores ------------------------------------------------------------------------------
class _Artifacts:
    def put(self, source: Path, artifact_path: str | None) -> None:
        raise NotImplementedError


class _ProxiedArtifacts(_Artifacts):
    """``mlflow-artifacts:/…``: PUT to the tracking server's artifact proxy (MLflow's
    ``MlflowArtifactsRepository.resolve_uri``: a host in the URI wins over the tracking URI's)."""

    def __init__(self, client: RestClient, root: str) -> None:
        parsed = urllib.parse.urlparse(root)
        tracking = urllib.parse.urlparse(client.tracking_uri)
        prefix = tracking.path.rstrip("/")
        netloc = parsed.netloc or tracking.netloc
        self.client = client
        self.base = f"{tracking.scheme}://{netloc}{prefix}/"
        self.root = parsed.path.strip("/")

    def put(self, source: Path, artifact_path: str | None) -> None:
        parts = [p for p in (self.root, artifact_path, source.name) if p]
        path = ARTIFACTS_API + "/" + urllib.parse.quote(posixpath.join(*parts))
        kind = mimetypes.guess_type(source.name)[0] or "application/octet-stream"
        answer = self.client.request(
            "PUT", path, data=source.read_bytes(), content_type=kind, base=self.base
        )
        self.client._ok(answer, f"storing {source.name}")


class _LocalArtifacts(_Artifacts):
    """A local artifact root (the tracking server writes artifacts on a filesystem this
    process sees): copied to, as MLflow's ``LocalArtifactRepository`` does."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def put(self, source: Path, artifact_path: str | None) -> None:
        folder = self.root / artifact_path if artifact_path else self.root
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, folder / source.name)


class _MlflowArtifacts(_Artifacts):
    """Any other store (s3:, gs:, …): MLflow's own repository, with its credentials."""

    def __init__(self, tracking_uri: str, run_id: str) -> None:
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=tracking_uri)
        self.run_id = run_id

    def put(self, source: Path, artifact_path: str | None) -> None:
        self.client.log_artifact(self.run_id, str(source), artifact_path)


# helpers --------------------------------------------------------------------------------------
def _tls() -> ssl.SSLContext | None:
    insecure = os.environ.get("MLFLOW_TRACKING_INSECURE_TLS", "").lower() in ("true", "1")
    server_cert = os.environ.get("MLFLOW_TRACKING_SERVER_CERT_PATH")
    client_cert = os.environ.get("MLFLOW_TRACKING_CLIENT_CERT_PATH")
    if not (insecure or server_cert or client_cert):
        return None
    context = ssl.create_default_context(cafile=server_cert or None)
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if client_cert:
        context.load_cert_chain(client_cert)
    return context


def _tag_list(tags: Mapping[str, Any] | None) -> list[dict[str, str]]:
    return [{"key": str(k), "value": str(v)} for k, v in (tags or {}).items()]


def _code_of(status: int) -> str:
    return {
        400: "INVALID_PARAMETER_VALUE",
        401: "UNAUTHENTICATED",
        403: "PERMISSION_DENIED",
        404: "ENDPOINT_NOT_FOUND",
    }.get(status, "INTERNAL_ERROR")


def _env_int(name: str, default: int) -> int:
    try:
        return max(0, int(os.environ.get(name) or default))
    except ValueError:
        return default


def _env_float(name: str, default: float) -> float:
    try:
        return max(0.0, float(os.environ.get(name) or default))
    except ValueError:
        return default
