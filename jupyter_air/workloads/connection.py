"""Which MLflow tracking server a submission uses, and where its links point.

In a kernel or a JupyterLab terminal, the jupyter-air server's environment says it all
(``MLFLOW_TRACKING_URI``, ``MLFLOW_TRACKING_TOKEN``, ``config.MLFLOW_UI``,
``config.BASE_URL``). From a shell, the running Jupyter servers are found from their runtime
files (``jupyter server list``) and asked ``GET <server>air/api/mlflow`` for the tracking URI and
UI; the token of a jupyter-air MLflow server is read from the data folder it belongs to (only
this user can read it): this process's, or the one a running Jupyter server records in Jupyter's
runtime folder (``jupyter-air-<pid>.json``) — the two may differ (``config.DATA_DIR``). The
token never travels over HTTP nor appears in a command line; when it cannot be read, ``air run``
says at once which data folder to use. With no Jupyter server running, the data folder's
embedded server is used — joined when it runs (a job keeps it up), started when ``air run``
needs it. Links printed for people are absolute URLs on the Jupyter server: the MLflow UI at
``<server>air/mlflow/`` and the job itself at ``<server>lab?air-workload=<job id>`` (the
Workloads panel opens on it).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import BASE_URL, DATA_DIR, MLFLOW_UI, SERVER_URL
from ..mlflow_server.records import Endpoint, Lease, ServerFiles, mlflow_folder
from ..pids import pid_alive
from ..tracking.identity import Credentials
from ..tracking.links import is_loopback_http, run_links


class NoTrackingServer(RuntimeError):
    """Neither MLFLOW_TRACKING_URI nor a running Jupyter server with jupyter-air."""


HOW_TO_FIX = (
    "No MLflow tracking server to record the runs: MLFLOW_TRACKING_URI is not set, no running "
    "Jupyter server with jupyter-air was found and jupyter-air's own server is not running. "
    "`air run` starts jupyter-air's server by itself; or set MLFLOW_TRACKING_URI to your MLflow "
    "server (e.g. export MLFLOW_TRACKING_URI=http://host:5000)."
)


@dataclass
class Connection:
    tracking_uri: str
    server_url: str | None = None  # the Jupyter server, absolute, with its base URL, ending '/'
    mlflow_ui: str | None = None  # where the browser reaches the MLflow UI, ending '/'
    source: str = "env"  # "env" | "server" | "data" (the data folder's embedded server)
    token: str | None = field(default=None, repr=False)  # MLFLOW_TRACKING_TOKEN for it
    embedded: bool = False  # the embedded server of this data folder
    lease: Lease | None = field(default=None, repr=False)  # held while this process needs it
    # where the token comes from, for messages (never the token itself)
    credentials: str | None = None
    # the user's name and password on a team server with MLflow's authentication
    identity: Credentials | None = field(default=None, repr=False)
    # the folder (``<data>/mlflow``) of the jupyter-air server at tracking_uri: this data
    # folder's or the Jupyter server's; None for a server of the user's
    server_folder: Path | None = field(default=None, repr=False)

    def activate(self) -> None:
        """Point this process's MLflow client at the server (a CLI or a supervisor: its own
        process, not a Jupyter server's)."""
        os.environ.update(self.environment())

    def environment(self) -> dict[str, str]:
        """What MLflow's client of a process needs to reach the server as this user."""
        env = {"MLFLOW_TRACKING_URI": self.tracking_uri}
        if self.token:
            env["MLFLOW_TRACKING_TOKEN"] = self.token
        if self.identity is not None and not self.ours:
            env.update(self.identity.env())
        return env

    @property
    def ours(self) -> bool:
        """A jupyter-air MLflow server (it answers to its bearer token, not to users)."""
        return self.embedded or self.server_folder is not None

    def job_link(self, job_id: str) -> str | None:
        if not self.server_url:
            return None
        return f"{self.server_url}lab?air-workload={urllib.parse.quote(job_id)}"

    def run_links(self, experiment_id: str | None, run_id: str | None) -> dict[str, str]:
        if not self.mlflow_ui or not experiment_id:
            return {}
        links = run_links(experiment_id, run_id or "")
        out = {"experiment": self.mlflow_ui + links["experiment"]}
        if run_id:
            out["run"] = self.mlflow_ui + links["run"]
            out["system_metrics"] = self.mlflow_ui + links["system_metrics"]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "tracking_uri": self.tracking_uri,
            "server_url": self.server_url,
            "mlflow_ui": self.mlflow_ui,
            "source": self.source,
        }


def find_connection(
    *,
    require_tracking: bool = True,
    start_embedded: bool = False,
    data: str | os.PathLike[str] | None = None,
    timeout_s: float = 3.0,
) -> Connection | None:
    """The tracking server and links for this process. Without a tracking URI in the
    environment or from a Jupyter server, the data folder's embedded server: joined when it
    runs, started when ``start_embedded`` (the connection then holds a lease on it: hand it to
    whatever keeps using it). Raises NoTrackingServer when ``require_tracking`` and there is
    none; else returns None then."""
    from ..config import data_dir, served_data_dirs

    env_uri = os.environ.get("MLFLOW_TRACKING_URI") or None
    env_token = os.environ.get("MLFLOW_TRACKING_TOKEN") or None
    env_ui, env_base, env_server = MLFLOW_UI.text(), BASE_URL.text(), SERVER_URL.text()
    folder = data_dir(data)
    files = ServerFiles(mlflow_folder(folder))
    embedded = _running_embedded(files)

    def made(uri: str, token: str | None, sent: str | None = None, **links: Any) -> Connection:
        """``token``: the one this process has for ``uri`` (``sent`` says where it comes
        from, default MLFLOW_TRACKING_TOKEN); else the one of its data folder, when it is a
        jupyter-air server's."""
        found = None if token else server_token(uri, folder)
        server_folder: Path | None
        credentials: str | None
        if found is not None:
            token, server_folder = found
            credentials = f"the token in {ServerFiles(server_folder).endpoint_file}"
        else:
            ours = embedded is not None and _same(uri, embedded.url)
            server_folder = files.folder if ours else None
            credentials = (sent or "MLFLOW_TRACKING_TOKEN") if token or env_token else None
            token = token or env_token  # what MLflow's client would send anyway
        return Connection(
            tracking_uri=uri,
            token=token,
            embedded=server_folder == files.folder,
            credentials=credentials,
            server_folder=server_folder,
            **links,
        )

    for info in _servers_by_preference(env_base):
        answer = _ask_mlflow(info, timeout_s)
        if answer is None:
            continue
        server_url = _with_slash(env_server or info.get("url") or "")
        uri = answer.get("tracking_uri")
        if env_uri and not _same(env_uri, uri):
            continue  # another tracking server than this process uses: its UI is not ours
        tracking = env_uri or uri
        if not tracking or answer.get("mode") == "disabled":
            continue
        ui = answer.get("ui")
        found = made(
            tracking,
            env_token if env_uri else None,
            server_url=server_url,
            mlflow_ui=_with_slash(urllib.parse.urljoin(server_url, ui)) if ui else None,
            source="env" if env_uri else "server",
        )
        if require_tracking and not found.token and answer.get("mode") == "embedded":
            theirs = served_data_dirs().get(_int(info.get("pid")))
            raise NoTrackingServer(_other_data_folder(server_url, theirs, folder))
        return found
    if env_uri:
        ui = None
        if env_ui:
            base = env_server or None
            ui = _with_slash(urllib.parse.urljoin(base, env_ui) if base else env_ui)
        elif urllib.parse.urlparse(env_uri).scheme in ("http", "https") and not is_loopback_http(
            env_uri
        ):
            ui = _with_slash(env_uri)
        server = _with_slash(env_server) if env_server else None
        return made(env_uri, env_token, server_url=server, mlflow_ui=ui, source="env")
    if embedded is not None and not start_embedded:
        sent = f"the token in {files.endpoint_file}"
        return made(embedded.url, embedded.token, sent, source="data")
    if start_embedded:
        from ..mlflow_server.control import ensure_running

        # joined under the start lock with a lease, even when it runs: its last user may be
        # leaving right now, and its guard would stop it under the job about to start
        endpoint, lease = ensure_running(files.folder, "air run")
        return Connection(
            tracking_uri=endpoint.url,
            token=endpoint.token,
            embedded=True,
            lease=lease,
            source="data",
            credentials=f"the token in {files.endpoint_file}",
            server_folder=files.folder,
        )
    if require_tracking:
        raise NoTrackingServer(HOW_TO_FIX)
    return None


def server_token(uri: str | None, data: Path | None = None) -> tuple[str, Path] | None:
    """The token of the jupyter-air MLflow server answering at ``uri``, and its folder: read
    from its data folder (``data``, then those of the running jupyter-air servers), where only
    this user can read it. None when ``uri`` is no running jupyter-air server's."""
    from ..config import served_data_dirs

    if not uri:
        return None
    folders = [data] if data is not None else []
    folders += [d for d in served_data_dirs().values() if d not in folders]
    for folder in folders:
        files = ServerFiles(mlflow_folder(folder))
        record = files.read_endpoint()
        if record is not None and _same(record.endpoint.url, uri) and record.guard_alive():
            return record.token, files.folder
    return None


def _other_data_folder(server_url: str, theirs: Path | None, ours: Path) -> str:
    """Why a Jupyter server's MLflow cannot be used from here, and what to do."""
    where = f"the data folder {theirs}" if theirs is not None else "another data folder"
    use = (
        f"Run `air` with {DATA_DIR}={theirs}"
        if theirs is not None
        else f"Run `air` with {DATA_DIR} set to that server's c.JupyterAir.data_dir"
    )
    return (
        f"The Jupyter server at {server_url} records its runs in jupyter-air's MLflow server of "
        f"{where}, and this command uses the data folder {ours}: that server's token could not "
        f"be read here, and it answers nothing without it. {use} (or in a terminal of that "
        "JupyterLab), or set MLFLOW_TRACKING_URI and MLFLOW_TRACKING_TOKEN."
    )


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def _running_embedded(files: ServerFiles) -> Endpoint | None:
    record = files.read_endpoint()
    return record.endpoint if record is not None and record.guard_alive() else None


def _servers_by_preference(base_url: str | None) -> list[dict[str, Any]]:
    """Running Jupyter servers: an ancestor of this process first (the server of this kernel
    or terminal), then those whose base URL is ours, then whose root contains the cwd."""
    servers = running_servers()
    ancestors = _ancestor_pids()
    cwd = os.path.realpath(os.getcwd())

    def rank(info: dict[str, Any]) -> tuple[int, int, int]:
        root = os.path.realpath(str(info.get("root_dir") or "/"))
        return (
            0 if info.get("pid") in ancestors else 1,
            0 if base_url and info.get("base_url") == base_url else 1,
            0 if cwd == root or cwd.startswith(root.rstrip(os.sep) + os.sep) else 1,
        )

    return sorted(servers, key=rank)


def running_servers() -> list[dict[str, Any]]:
    """What ``jupyter server list`` shows: the runtime files of Jupyter servers whose process is
    alive (read directly: importing jupyter_server's app costs a second)."""
    from jupyter_core.paths import jupyter_runtime_dir

    folder = jupyter_runtime_dir()
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    servers = []
    for name in names:
        if not (name.startswith("jpserver-") and name.endswith(".json")):
            continue
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as file:
                info = json.load(file)
            alive = pid_alive(int(info["pid"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if alive:
            servers.append(info)
    return servers


def _ask_mlflow(info: dict[str, Any], timeout_s: float) -> dict[str, Any] | None:
    url = info.get("url")
    if not url:
        return None
    request = urllib.request.Request(_with_slash(url) + "air/api/mlflow")
    if info.get("token"):
        request.add_header("Authorization", f"token {info['token']}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return json.loads(response.read().decode())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _ancestor_pids() -> set[int]:
    try:
        import psutil

        return {p.pid for p in psutil.Process().parents()}
    except Exception:
        return set()


def _same(a: str | None, b: str | None) -> bool:
    return (a or "").rstrip("/") == (b or "").rstrip("/")


def _with_slash(url: str) -> str:
    return url if url.endswith("/") else url + "/"
