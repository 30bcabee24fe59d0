"""The level of a log line (error, warning or info), read from the line itself.

A marker in the line wins, the leftmost one when there are several: level words in capitals
(``ERROR``, ``CRITICAL``, ``FATAL``, ``WARNING``, ``WARN``, ``INFO``, ``DEBUG``) as Python's
logging and most loggers print them; ``Traceback (most recent call last):`` and an exception line
(``ValueError: …``, ``…Exception: …``); ``error:`` / ``warning:`` as compilers print them;
``…Warning:`` as Python's warnings print them; glog/torch prefixes (``E1129 10:…``,
``[W socket.cpp:…]``). The lines of a traceback (indented frames, chained-exception notices, the
final exception line) are errors.

A line without a marker is info on stdout and **warning on stderr**: stderr is where programs
write what is not their regular output, and Python's logging writes its (marked) records there.
Progress bars (tqdm's ``12%|██``) on stderr are info.
"""

from __future__ import annotations

import re

INFO = "info"
WARNING = "warning"
ERROR = "error"
LEVELS = (INFO, WARNING, ERROR)

_SCAN = 300  # characters of a line looked at for a marker

_MARKER = re.compile(
    r"(?P<error>\b(?:ERROR|CRITICAL|FATAL|SEVERE|EXCEPTION)\b"
    r"|^Traceback \(most recent call last\)"
    r"|(?:Error|Exception)\b(?=:|$)"
    r"|(?:^|\s)(?:[Ee]rror|[Ff]atal)(?::|\s*\[))"
    r"|(?P<warning>\b(?:WARNING|WARN)\b"
    r"|\b[A-Z]\w*Warning\b(?=:)"
    r"|(?:^|\s)[Ww]arning:)"
    r"|(?P<info>\b(?:INFO|DEBUG|TRACE|NOTICE)\b)"
    r"|^\[?(?P<glog>[IWEF])\d{4} \d\d:\d\d:\d\d"
    r"|^\[(?P<torch>[IWE]) [\w./-]+:\d+\]"
)
_PROGRESS = re.compile(r"\d+%\|")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_RANK_PREFIX = re.compile(r"^\[(?:rank|default)\d+\]:\s?")  # torchrun's per-rank prefix
_GLOG = {"I": INFO, "W": WARNING, "E": ERROR, "F": ERROR}
_GLOG_STARTS = frozenset("IWEF[")
_TRACEBACK_GOES_ON = re.compile(
    r"^(?:\s|$|During handling of the above exception|The above exception was the direct cause)"
)


# every marker contains one of these (lowercased); most lines contain none, and these checks are
# ten times cheaper than the regex
_HINTS = ("err", "warn", "info", "debug", "trace", "notice", "critical", "fatal", "severe", "excep")


def marker_level(text: str) -> str | None:
    """The level a line says it has, or None."""
    head = text[:_SCAN]
    if head[:1] not in _GLOG_STARTS:
        low = head.lower()
        if not any(hint in low for hint in _HINTS):
            return None
    if "\x1b" in head:
        head = _ANSI.sub("", head)
    match = _MARKER.search(head)
    if match is None:
        return None
    if match.group("error") is not None:
        return ERROR
    if match.group("warning") is not None:
        return WARNING
    if match.group("info") is not None:
        return INFO
    letter = match.group("glog") or match.group("torch")
    return _GLOG.get(letter or "I", INFO)


class LevelReader:
    """Levels for the lines of one stream, in order (it remembers being inside a traceback)."""

    def __init__(self, stderr: bool) -> None:
        self.stderr = stderr
        self.in_traceback = False

    def level(self, text: str) -> str:
        if text.startswith("["):
            text = _RANK_PREFIX.sub("", text, count=1)
        if self.in_traceback:
            if _TRACEBACK_GOES_ON.match(text):
                return ERROR
            self.in_traceback = False  # the exception line ends the traceback
            if not text.startswith("Traceback"):
                return ERROR
        found = marker_level(text)
        if text.startswith("Traceback (most recent call last)"):
            self.in_traceback = True
            return ERROR
        if found is not None:
            return found
        if self.stderr and not ("%|" in text[:_SCAN] and _PROGRESS.search(text, 0, _SCAN)):
            return WARNING
        return INFO
