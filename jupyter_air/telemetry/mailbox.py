"""A node agent's reports carried over Ray instead of HTTP.

A node of a Ray cluster may not reach the Jupyter server at all (it listens on localhost, as
``jupyter lab`` does by default; a proxy or a firewall stands between them), but the Jupyter host
reaches every node through Ray. So the agent on a Ray node hands each report to its ``Mailbox``
(its sender); the Jupyter host's ``ray_agents`` process takes it (``take``), forwards it to the
server with that node's own ``HttpSender`` (``forward``: the node's token never leaves the Jupyter
host) and gives the server's answer back (``give``), which the agent acts on as before (sample or
idle, when to report next). Nothing is lost while the link is down: a report not taken in time
fails like an unreachable server, and the agent keeps its samples (bounded) for the next one; the
server skips samples it already has.
"""

from __future__ import annotations

import threading

from .models import IngestRequest, IngestResponse
from .sender import AgentRejected, ReportRefused, Send, SendFailed

ERRORS: dict[str, type[Exception]] = {
    "rejected": AgentRejected,
    "refused": ReportRefused,
    "failed": SendFailed,
}
Answer = tuple[str, str]  # ("ok", the response's JSON) or (an ERRORS key, the message)


class Mailbox:
    """The agent's sender on its node: ``__call__`` leaves the report for the Jupyter host and
    waits (at most ``timeout_s``) for the answer it gives back."""

    def __init__(self, timeout_s: float = 30.0) -> None:
        self.timeout_s = timeout_s
        self._changed = threading.Condition()
        self._report: tuple[int, bytes] | None = None  # waiting to be taken
        self._answer: tuple[int, Answer] | None = None
        self._serial = 0

    def __call__(self, request: IngestRequest) -> IngestResponse:
        body = request.model_dump_json().encode()
        with self._changed:
            self._serial += 1
            serial = self._serial
            self._report, self._answer = (serial, body), None
            self._changed.notify_all()
            answered = self._changed.wait_for(
                lambda: self._answer is not None and self._answer[0] == serial, self.timeout_s
            )
            if not answered or self._answer is None:
                self._report = None
                raise SendFailed(
                    f"the Jupyter host did not take this node's report within "
                    f"{self.timeout_s:g} s (through Ray)"
                )
            kind, text = self._answer[1]
        if kind == "ok":
            return IngestResponse.model_validate_json(text)
        raise ERRORS.get(kind, SendFailed)(text)

    def take(self, wait_s: float) -> tuple[int, bytes] | None:
        """The report waiting to be forwarded (its serial and JSON), once; None when none came
        within ``wait_s``."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._report is not None, wait_s):
                return None
            report, self._report = self._report, None
            return report

    def give(self, serial: int, answer: Answer) -> None:
        """The server's answer to report ``serial`` (an answer to an older one is dropped)."""
        with self._changed:
            if serial == self._serial:
                self._answer = (serial, answer)
                self._changed.notify_all()


def forward(send: Send, body: bytes) -> Answer:
    """Send a report taken from a node's mailbox to the server; the answer to give back."""
    try:
        response = send(IngestRequest.model_validate_json(body))
    except AgentRejected as error:
        return "rejected", str(error)
    except ReportRefused as error:
        return "refused", str(error)
    except SendFailed as error:
        return "failed", str(error)
    except ValueError as error:  # not a report (a node of another version)
        return "refused", f"the node's report is not one this server reads: {error}"
    except Exception as error:  # the server away: the agent keeps its samples for the next one
        return "failed", f"{type(error).__name__}: {error}"
    return "ok", response.model_dump_json()
