"""Live controls in the cell while a call runs: a status line, a Cancel button and a chart of the
metrics rank 0 logs, then the static run card of today once the run ends.

Used by ``.distributed()`` calls (launch/driver.py), ``remote=True`` calls and ``%%air_run``
(magics.py). The widget takes the place of the run's own display (tracking/display.py: same
display id) while the run is live, and carries the run card's ``text/html`` fallback in its
bundle; when the run ends the run card replaces it, so a saved notebook, nbconvert and GitHub
show the card. The chart is a plotly ``FigureWidget``, fed from the MLflow run every few
seconds by a thread the call starts and stops (bounded HTTP calls: no retries, a timeout).

Widgets are only shown when the frontend can show them: jupyter-air's JupyterLab extension tells
the kernel so when it loads the IPython extension (``config.WIDGETS=1``, set only for a
notebook whose renderers include the widget view). nbclient, ``jupyter console`` and kernels run
headless never get it and keep the plain output. Cancel is handled by that extension: for a call
of the kernel it interrupts the kernel (what Ctrl-C does: every rank stopped, the run KILLED),
for a job run it asks the server to cancel it (what the Workloads panel and ``air cancel`` do).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..config import WIDGETS
from ..rendering import seconds_text

WIDGETS_ENV = WIDGETS.name
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"
POLL_S = 3.0  # MLflow is read this often
TICK_S = 1.0  # the elapsed time in the status line changes this often
REQUEST_TIMEOUT_S = 5.0  # one MLflow call at most
MAX_KEYS = 20  # metric keys charted at most
MAX_POINTS = 5000  # points read per key at most (the first ones)
SYSTEM_PREFIX = "system/"  # MLflow's system metrics: not what the function logs

Series = dict[str, list[tuple[int, float]]]  # metric key → (step, value), by step


def widgets_shown() -> bool:
    """Whether this kernel's frontend shows widgets (see the module's docstring)."""
    if os.environ.get(WIDGETS_ENV) != "1":
        return False
    ipython = sys.modules.get("IPython")
    try:
        shell = ipython.get_ipython() if ipython is not None else None
    except Exception:
        return False
    if getattr(shell, "kernel", None) is None:
        return False
    try:
        import anywidget  # noqa: F401
        import ipywidgets  # noqa: F401
        import plotly.graph_objects  # noqa: F401
    except ImportError:
        return False
    return True


# the status line -----------------------------------------------------------------------------
@dataclass
class LiveStatus:
    """What the status line says: state, elapsed, attempt k of n, where it runs, the last step."""

    where: str
    attempt: int = 1
    attempts: int = 1
    state: str = "STARTING"
    started: float = 0.0  # the clock's time at the start
    step: int | None = None
    metrics: int = 0

    def text(self, now: float) -> str:
        parts = [self.state, seconds_text(now - self.started)]
        if self.attempts > 1 or self.attempt > 1:
            parts.append(f"attempt {self.attempt} of {self.attempts}")
        parts.append(self.where)
        if self.step is not None:
            parts.append(f"step {self.step}")
        return " · ".join(parts)

    def take(self, series: Series) -> None:
        """The last step logged, from the metrics read."""
        steps = [points[-1][0] for points in series.values() if points]
        self.step = max(steps) if steps else None
        self.metrics = len(series)


# reading the metrics ---------------------------------------------------------------------------
def fetch_metrics(
    tracking_uri: str,
    run_id: str,
    *,
    timeout_s: float = REQUEST_TIMEOUT_S,
    max_keys: int = MAX_KEYS,
    max_points: int = MAX_POINTS,
) -> Series:
    """Every metric of the run but MLflow's system metrics, as (step, value) by step; one
    request for the run and one per key, each without retries and within ``timeout_s``."""
    from mlflow.utils.credentials import get_default_host_creds
    from mlflow.utils.rest_utils import http_request

    creds = get_default_host_creds(tracking_uri)

    def get(endpoint: str, params: dict[str, Any]) -> dict[str, Any]:
        response = http_request(
            creds, endpoint, "GET", max_retries=0, timeout=timeout_s, params=params
        )
        response.raise_for_status()
        return dict(response.json())

    run = get("/api/2.0/mlflow/runs/get", {"run_id": run_id})
    keys = sorted(
        {
            str(m["key"])
            for m in run.get("run", {}).get("data", {}).get("metrics", [])
            if not str(m.get("key", "")).startswith(SYSTEM_PREFIX)
        }
    )[:max_keys]
    series: Series = {}
    for key in keys:
        page = get(
            "/api/2.0/mlflow/metrics/get-history",
            {"run_id": run_id, "metric_key": key, "max_results": max_points},
        )
        by_step: dict[int, tuple[int, float]] = {}
        for m in page.get("metrics", []):
            step = int(m.get("step", 0))
            stamp = int(m.get("timestamp", 0))
            if step not in by_step or stamp >= by_step[step][0]:
                by_step[step] = (stamp, float(m.get("value", "nan")))
        series[key] = [(step, by_step[step][1]) for step in sorted(by_step)][:max_points]
    return series


# the widget ----------------------------------------------------------------------------------
_ESM = """
function render({ model, el }) {
  el.classList.add('jp-air-live');
  const card = document.createElement('div');
  card.className = 'jp-air-live-card';
  const row = document.createElement('div');
  row.className = 'jp-air-live-row';
  const status = document.createElement('span');
  status.className = 'jp-air-live-status';
  const button = document.createElement('button');
  button.className = 'jp-air-live-cancel jp-mod-styled jp-mod-warn';
  button.textContent = 'Cancel';
  row.append(status, button);
  el.append(card, row);
  const draw = () => {
    status.textContent = model.get('status');
    card.innerHTML = model.get('card');
    const cancel = model.get('cancel') || {};
    button.hidden = !cancel.action;
  };
  button.addEventListener('click', () => {
    button.disabled = true;
    button.textContent = 'Cancelling…';
    el.dispatchEvent(
      new CustomEvent('jupyter-air-live-cancel', {
        bubbles: true,
        detail: { ...(model.get('cancel') || {}) }
      })
    );
  });
  model.on('change:status', draw);
  model.on('change:card', draw);
  model.on('change:cancel', draw);
  draw();
  return () => {
    model.off('change:status', draw);
    model.off('change:card', draw);
    model.off('change:cancel', draw);
  };
}
export default { render };
"""


def _status_widget_class() -> type:
    import anywidget
    import traitlets

    class LiveStatusWidget(anywidget.AnyWidget):
        _esm = _ESM
        status = traitlets.Unicode("").tag(sync=True)
        card = traitlets.Unicode("").tag(sync=True)  # the run card's HTML (names escaped)
        cancel = traitlets.Dict({}).tag(sync=True)  # {"action": "interrupt"} or a job's

    return LiveStatusWidget


Publish = Callable[[dict[str, Any], str], None]  # (bundle, display id)


def _update_display(bundle: dict[str, Any], display_id: str) -> None:
    from IPython.display import update_display

    update_display(bundle, raw=True, display_id=display_id)


@dataclass
class LiveCall:
    """The live widget of one run, in the run's display (``display_id``) until ``finish``."""

    display_id: str
    card: dict[str, Any]  # the run card's bundle (tracking.display.run_bundle)
    status: LiveStatus
    tracking_uri: str | None
    run_id: str | None
    cancel: dict[str, str] = field(default_factory=dict)
    publish: Publish = _update_display
    clock: Callable[[], float] = time.monotonic
    fetch: Callable[[str, str], Series] = fetch_metrics
    poll_s: float = POLL_S
    tick_s: float = TICK_S
    series: Series = field(default_factory=dict)
    error: str | None = None  # the last failed read, for the record; the chart keeps its points

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._box: Any = None
        self._text: Any = None
        self._figure: Any = None
        self.finished = False
        self.polls = 0  # reads of MLflow done, failed ones included

    # lifecycle ----------------------------------------------------------------------------------
    def start(self) -> LiveCall:
        """Show the widget in place of the run card and start following the run."""
        import ipywidgets

        self.status.started = self.clock()
        self.status.state = "RUNNING"
        self._text = _status_widget_class()(
            status=self.status.text(self.clock()),
            card=str(self.card.get("text/html", "")),
            cancel=dict(self.cancel),
        )
        self._box = ipywidgets.VBox([self._text])
        self.publish(self.bundle(), self.display_id)
        self._thread = threading.Thread(target=self._follow, name="jupyter-air-live", daemon=True)
        self._thread.start()
        return self

    def bundle(self) -> dict[str, Any]:
        """The widget's view with the run card as its fallback (what a saved notebook keeps
        if it is saved while the run is live)."""
        view = {"version_major": 2, "version_minor": 0, "model_id": self._box.model_id}
        return {WIDGET_VIEW_MIME: view, **self.card}

    def set(self, **changes: Any) -> None:
        """Change the status (``state``, ``attempt``…) and show it."""
        with self._lock:
            for name, value in changes.items():
                setattr(self.status, name, value)
        self._tick()

    def finish(self, card: dict[str, Any] | None = None) -> None:
        """Stop following; the run card (``card``: the run's final bundle) takes the widget's
        place and the widgets are closed. Safe to call twice."""
        if self.finished:
            return
        self.finished = True
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=REQUEST_TIMEOUT_S * 2 + 1)
        with contextlib.suppress(Exception):
            self.publish(card or self.card, self.display_id)
        for widget in (self._figure, self._text, self._box):
            if widget is not None:
                with contextlib.suppress(Exception):
                    widget.close()

    # following ----------------------------------------------------------------------------------
    def _follow(self) -> None:
        next_poll = self.clock()
        while not self._stop.is_set():
            if self.clock() >= next_poll:
                self.poll()
                next_poll = self.clock() + self.poll_s
            self._tick()
            self._stop.wait(self.tick_s)

    def poll(self) -> None:
        """Read the run's metrics once and show them (nothing shown while there are none)."""
        if not self.tracking_uri or not self.run_id:
            return
        try:
            series = self.fetch(self.tracking_uri, self.run_id)
        except Exception as failure:  # MLflow slow or away: keep what is shown, try again
            self.error = str(failure)
            self.polls += 1
            return
        self.error = None
        with self._lock:
            self.series = series
            self.status.take(series)
        if series and not self._stop.is_set():
            self._chart(series)
        self._tick()
        self.polls += 1

    def _tick(self) -> None:
        if self._text is None:
            return
        with self._lock:
            text = self.status.text(self.clock())
        with contextlib.suppress(Exception):
            self._text.status = text

    def _chart(self, series: Series) -> None:
        import plotly.graph_objects as go

        if self._figure is None:
            self._figure = go.FigureWidget(
                layout={
                    "height": 260,
                    "margin": {"l": 50, "r": 20, "t": 20, "b": 40},
                    "xaxis": {"title": {"text": "step"}},
                    "legend": {"orientation": "h"},
                }
            )
            self._box.children = (self._text, self._figure)
        figure = self._figure
        shown = {trace.name: trace for trace in figure.data}
        with figure.batch_update():
            for key, points in series.items():
                steps = [step for step, _ in points]
                values = [value for _, value in points]
                if key in shown:
                    shown[key].x, shown[key].y = steps, values
                else:
                    figure.add_scatter(x=steps, y=values, name=key, mode="lines+markers")

    # what tests and callers read ------------------------------------------------------------------
    @property
    def text(self) -> str:
        with self._lock:
            return self.status.text(self.clock())

    @property
    def chart(self) -> dict[str, tuple[list[int], list[float]]]:
        """The chart's traces: key → (steps, values); empty while nothing is charted."""
        if self._figure is None:
            return {}
        return {t.name: (list(t.x), list(t.y)) for t in self._figure.data}


def start_queued(
    job_id: str,
    *,
    where: str,
    cancel: dict[str, str],
    attempts: int = 1,
    publish: Publish = _update_display,
    show: Callable[[dict[str, Any]], str] | None = None,
) -> LiveCall | None:
    """A queued job run's widget until its attempt starts: QUEUED, for how long, its place and
    why (``where``, changed with ``set``), and Cancel. None where the frontend shows no widgets
    (the printed lines say the same). ``show`` displays a bundle and returns its display id."""
    if not widgets_shown():
        return None
    card = {"text/plain": f"Job run {job_id} is queued"}
    try:
        display_id = (show or _show)(card)
        live = LiveCall(
            display_id=display_id,
            card=card,
            status=LiveStatus(where=where, attempts=attempts),
            tracking_uri=None,
            run_id=None,
            cancel=cancel,
            publish=publish,
        ).start()
        live.set(state="QUEUED")
        return live
    except Exception as failure:  # a display is not worth failing the call for
        print(f"jupyter-air: no live widget ({failure})", file=sys.stderr)
        return None


def _show(bundle: dict[str, Any]) -> str:
    from IPython.display import display

    handle = display(bundle, raw=True, display_id=True)
    return str(handle.display_id)


def start_live(
    display: Any,
    *,
    where: str,
    tracking_uri: str | None,
    run_id: str | None,
    cancel: dict[str, str],
    attempt: int = 1,
    attempts: int = 1,
) -> LiveCall | None:
    """The live widget of the run shown by ``display`` (a tracking.display.RunDisplay: the
    widget takes the place of its run card until ``finish``), or None
    where the frontend cannot show widgets (or they fail to start: today's output then)."""
    if display is None or not widgets_shown() or not getattr(display, "bundle", None):
        return None
    try:
        return LiveCall(
            display_id=display.display_id,
            card=display.bundle,
            status=LiveStatus(where=where, attempt=attempt, attempts=attempts),
            tracking_uri=tracking_uri,
            run_id=run_id,
            cancel=cancel,
        ).start()
    except Exception as failure:  # a display is not worth failing the call for
        print(f"jupyter-air: no live widget ({failure})", file=sys.stderr)
        return None
