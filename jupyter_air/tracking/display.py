"""A run as cell output: the MIME bundle of docs/mlflow.md, shown with a display id and updated in
place when the run's status changes.

The bundle carries ``application/vnd.jupyter-air.run+json`` (rendered by our frontend), a
``text/html`` fallback with plain links (classic Notebook, nbconvert, GitHub) and ``text/plain``.
Every name in the HTML is escaped: run and experiment names are user input. Without a UI to link
to, the run id and experiment are shown with the reason there is no link.
"""

from __future__ import annotations

import html
import sys
from typing import TYPE_CHECKING, Any, TypeGuard

from ..api.enums import RUN_TERMINAL
from ..rendering import seconds_text
from .context import KernelContext, kernel_context
from .links import absolute_ui, mlflow_ui, run_links
from .naming import TAG_ATTEMPT, TAG_JOB
from .readiness import Reporter, starting_message

if TYPE_CHECKING:
    from mlflow.entities import Run

MIME_TYPE = "application/vnd.jupyter-air.run+json"
TERMINAL_STATUSES = RUN_TERMINAL


def run_payload(
    run: Run,
    *,
    experiment_name: str | None,
    resumed: bool = False,
    tracking_uri: str | None = None,
    context: KernelContext | None = None,
) -> dict[str, Any]:
    """The JSON of the run bundle for an MLflow ``Run``."""
    context = context or kernel_context()
    info = run.info
    ui, no_ui_reason = mlflow_ui(tracking_uri, context)
    payload: dict[str, Any] = {
        "run_id": info.run_id,
        "run_name": info.run_name,
        "status": info.status,
        "experiment_id": info.experiment_id,
        "experiment_name": experiment_name,
        "parent_run_id": run.data.tags.get("mlflow.parentRunId"),
        "resumed": resumed,
        "start_time": info.start_time,
        "end_time": info.end_time if info.status in TERMINAL_STATUSES else None,
        "links": run_links(info.experiment_id, info.run_id),
        "ui": ui,
    }
    if ui is None:
        payload["no_ui_reason"] = no_ui_reason
    job_id = run.data.tags.get(TAG_JOB)
    if job_id:  # an attempt of a workload: the display links to its job run
        payload["job_id"] = job_id
        attempt = run.data.tags.get(TAG_ATTEMPT, "")
        payload["attempt"] = int(attempt) if attempt.isdigit() else None
    return payload


def run_bundle(payload: dict[str, Any], *, server_url: str | None = None) -> dict[str, Any]:
    """The MIME bundle for a run payload. ``server_url`` (``config.SERVER_URL``) makes the
    HTML and text links absolute when the UI is a path on the Jupyter server."""
    ui = payload.get("ui")
    base = absolute_ui(ui, server_url) if _safe_base(ui) else None
    return {
        MIME_TYPE: payload,
        "text/html": _html(payload, base),
        "text/plain": _plain(payload, base),
    }


def format_duration(start_ms: int | None, end_ms: int | None) -> str | None:
    """How long a run took (None while it runs)."""
    if start_ms is None or end_ms is None:
        return None
    return seconds_text((end_ms - start_ms) / 1000)


def _safe_base(ui: Any) -> TypeGuard[str]:
    return isinstance(ui, str) and ui.startswith(("/", "http://", "https://"))


def _summary(payload: dict[str, Any]) -> tuple[str, str | None]:
    status = str(payload.get("status") or "")
    duration = format_duration(payload.get("start_time"), payload.get("end_time"))
    return status, duration


def _html(payload: dict[str, Any], base: str | None) -> str:
    e = html.escape
    status, duration = _summary(payload)
    name = payload.get("run_name") or payload["run_id"]
    parts = [
        '<div class="jp-air-run-fallback">',
        f"<strong>MLflow run</strong> <code>{e(str(name))}</code> · {e(status)}",
    ]
    if duration:
        parts.append(f" · {e(duration)}")
    if payload.get("resumed"):
        parts.append(" · resumed")
    parts.append(f" · experiment <code>{e(str(payload.get('experiment_name') or ''))}</code>")
    if payload.get("parent_run_id"):
        parts.append(f" · child of run <code>{e(str(payload['parent_run_id']))}</code>")
    parts.append("<br>")
    if base is not None:
        links = payload["links"]
        anchors = [
            (links["run"], "Run"),
            (links["system_metrics"], "System metrics"),
            (links["experiment"], "Experiment"),
        ]
        parts.append(
            " · ".join(
                f'<a href="{e(base + href)}" target="_blank" rel="noopener noreferrer">{label}</a>'
                for href, label in anchors
            )
        )
    else:
        reason = payload.get("no_ui_reason") or "no MLflow UI is known to this kernel"
        parts.append(
            f"Run id <code>{e(str(payload['run_id']))}</code>, experiment id "
            f"<code>{e(str(payload.get('experiment_id')))}</code>. No link: {e(reason)}."
        )
    parts.append("</div>")
    return "".join(parts)


def _plain(payload: dict[str, Any], base: str | None) -> str:
    status, duration = _summary(payload)
    head = f"MLflow run {payload.get('run_name') or ''!r} ({payload['run_id']}) {status}"
    if duration:
        head += f", {duration}"
    if payload.get("resumed"):
        head += ", resumed"
    lines = [head, f"Experiment: {payload.get('experiment_name')!r} ({payload['experiment_id']})"]
    if payload.get("parent_run_id"):
        lines.append(f"Parent run: {payload['parent_run_id']}")
    if base is not None:
        lines.append(f"Run: {base}{payload['links']['run']}")
    else:
        lines.append(f"No link: {payload.get('no_ui_reason')}.")
    return "\n".join(lines)


class RunDisplay:
    """The output of one run in the notebook: shown once, then updated in place (every output
    of this run, in any cell, shares the display id)."""

    def __init__(self, run_id: str, server_url: str | None = None) -> None:
        self.run_id = run_id
        self.display_id = f"jupyter-air-run-{run_id}"
        self.server_url = server_url
        self.status: str | None = None
        self.shown = False
        self.bundle: dict[str, Any] = {}  # the last bundle shown

    def show(self, payload: dict[str, Any]) -> None:
        bundle = self.bundle = run_bundle(payload, server_url=self.server_url)
        if _in_ipython():
            from IPython.display import display

            display(bundle, raw=True, display_id=self.display_id)
        else:
            print(bundle["text/plain"], file=sys.stderr)
        self.status = payload.get("status")
        self.shown = True

    def update(self, payload: dict[str, Any]) -> None:
        if not self.shown:
            self.show(payload)
            return
        status = payload.get("status")
        bundle = self.bundle = run_bundle(payload, server_url=self.server_url)
        if _in_ipython():
            from IPython.display import update_display

            update_display(bundle, raw=True, display_id=self.display_id)
        elif status != self.status:
            print(bundle["text/plain"], file=sys.stderr)
        self.status = status


def starting_reporter(*, embedded: bool) -> Reporter:
    """A Reporter for readiness.wait_for_tracking_server: one line in the cell output, updated
    in place; on stderr (twice: start and end) outside IPython."""
    handle: Any = None

    def report(elapsed_s: float, done: bool) -> None:
        nonlocal handle
        text = starting_message(elapsed_s, done, embedded=embedded)
        if not _in_ipython():
            if handle is None or done:
                print(text, file=sys.stderr, flush=True)
                handle = True
            return
        from IPython.display import display

        if handle is None:
            handle = display({"text/plain": text}, raw=True, display_id=True)
        else:
            handle.update({"text/plain": text}, raw=True)

    return report


def _in_ipython() -> bool:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        return ipython.get_ipython() is not None
    except Exception:
        return False
