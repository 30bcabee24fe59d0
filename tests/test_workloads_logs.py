"""Logs: levels read from the lines, capture of a real process's output as it is written
(nothing lost when it is killed), and the query API the CLI and the Logs view use — node,
attempt, level, text, time range, positions for following and paging back, tail, limit,
downloads."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from test_workloads_store import new_job

from jupyter_air.logs.capture import StreamCapture
from jupyter_air.logs.filters import InvalidQuery
from jupyter_air.logs.levels import ERROR, INFO, LevelReader, marker_level
from jupyter_air.logs.logfile import PREFIX, LogWriter, timestamp
from jupyter_air.logs.query import download_logs, download_to, query_logs
from jupyter_air.workloads.paths import log_path
from jupyter_air.workloads.store import JobStore


@pytest.mark.parametrize(
    ("line", "stderr", "level"),
    [
        ("epoch 1 loss 0.25", False, "info"),
        ("epoch 1 loss 0.25", True, "warning"),  # stderr without a marker
        ("INFO:root:starting", True, "info"),  # Python logging writes to stderr
        ("2025-11-29 10:00:00,000 - trainer - WARNING - lr is large", False, "warning"),
        ("ERROR: out of memory", False, "error"),
        ("CRITICAL failure", False, "error"),
        ("[W socket.cpp:663] [c10d] The client socket has failed to connect", True, "warning"),
        ("E1129 10:00:00.123 1234 api.py:1] failed (exitcode: 1)", True, "error"),
        ("I1129 10:00:00.123 1234 api.py:1] starting", True, "info"),
        ("/x/train.py:3: UserWarning: careful", True, "warning"),
        ("error: linker failed", False, "error"),
        ("ValueError: bad value", False, "error"),
        ("RuntimeError", True, "error"),
        ("no errors so far", False, "info"),
        (" 45%|████▌     | 45/100 [00:01<00:01, 44.2it/s]", True, "info"),  # tqdm on stderr
        ("\x1b[31mERROR\x1b[0m colourful", False, "error"),
        ("INFO retrying after ERROR", False, "info"),  # the leftmost marker wins
    ],
)
def test_levels(line, stderr, level):
    assert LevelReader(stderr=stderr).level(line) == level


def test_a_traceback_is_errors_until_its_exception_line():
    reader = LevelReader(stderr=True)
    lines = [
        "Traceback (most recent call last):",
        '  File "train.py", line 3, in <module>',
        "    main()",
        "",
        "During handling of the above exception, another exception occurred:",
        '[rank0]:   File "x.py", line 1',
        "ZeroDivisionError: division by zero",
        "back to normal",
    ]
    assert [reader.level(line) for line in lines] == ["error"] * 7 + ["warning"]
    assert marker_level("nothing") is None


CHILD = textwrap.dedent(
    r"""
    import os, sys, signal, time
    for i in range(500):
        print(f"line {i}", flush=True)
    print("WARNING: half way", file=sys.stderr, flush=True)
    sys.stderr.write("Traceback (most recent call last):\n  File 'x'\nKeyError: 'k'\n")
    sys.stderr.flush()
    for p in (10, 50, 100):
        sys.stdout.write(f"\rprogress {p}%"); sys.stdout.flush(); time.sleep(0.01)
    sys.stdout.write("\n")
    sys.stdout.write("é ünïcode and \x00 bytes " + "x" * 70000 + "\n")
    sys.stdout.write("no newline at the end"); sys.stdout.flush()
    time.sleep(0.2)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_capture_of_a_real_process_that_gets_killed(tmp_path):
    path = tmp_path / "node_0.log"
    writer = LogWriter(path)
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    captures = [
        StreamCapture(os.dup(proc.stdout.fileno()), writer, "stdout").start(),
        StreamCapture(os.dup(proc.stderr.fileno()), writer, "stderr").start(),
    ]
    proc.stdout.close()
    proc.stderr.close()
    assert proc.wait(timeout=30) == -signal.SIGKILL
    for capture in captures:
        assert capture.join(timeout=10) and capture.error is None
    writer.close()
    raw = path.read_bytes().decode()
    lines = raw.splitlines()
    texts = [line[PREFIX:] for line in lines]
    out = [line for line in lines if line[31:35] == "out "]  # each stream in order
    assert [line[PREFIX:] for line in out[:500]] == [f"line {i}" for i in range(500)]
    assert all(line.startswith("INFO  ") for line in out[:500])
    by_text = {line[PREFIX:]: line[:5] for line in lines}
    assert by_text["WARNING: half way"] == "WARN "
    assert by_text["Traceback (most recent call last):"] == "ERROR"
    assert by_text["KeyError: 'k'"] == "ERROR"
    assert "progress 100%" in texts  # what a terminal shows of the redrawn line
    assert "no newline at the end" in texts
    long = [t for t in texts if t.startswith("é ünïcode")]
    assert long and len(long[0]) == 64 * 1024  # cut into pieces
    assert writer.stats.lines == len(lines)
    assert writer.stats.errors == 3 and writer.stats.warnings == 1
    stamps = [line[6:30] for line in lines]
    assert stamps == sorted(stamps)


# the query API ------------------------------------------------------------------------------
@pytest.fixture
def logs(tmp_path):
    """A finished job run with 2 nodes and 2 attempts, its logs written with known times."""
    store = JobStore.for_data_dir(tmp_path)
    job = new_job(
        store,
        compute={"num_accelerators": 1, "accelerator_type": "CPU", "num_nodes": 2},
        max_retries=1,
    )
    store.mark_running(job.id)
    t0 = 1_764_410_000.0
    for attempt in (1, 2):
        store.start_attempt(job.id, attempt)
        for node in (0, 1):
            with LogWriter(log_path(tmp_path, job.id, attempt, node)) as writer:
                for i in range(100):
                    level = "error" if i % 25 == 0 else "warning" if i % 10 == 0 else "info"
                    stream = "stderr" if level != "info" else "stdout"
                    text = f"a{attempt} n{node} step {i}" + (" Needle" if i % 30 == 7 else "")
                    writer.write(stream, [(level, text)], t0 + i)
        store.finish_attempt(job.id, attempt, "FAILED" if attempt == 1 else "SUCCEEDED", "x")
    store.finish_job(job.id, "SUCCEEDED", "ok")
    return store, store.get_job(job.id), t0


def texts(page):
    return [line.text for line in page.lines]


def test_defaults_latest_attempt_node_0(logs):
    store, job, t0 = logs
    page = query_logs(store, job.id)
    assert len(page.lines) == 100 and page.attempt == 2 and page.node == 0
    first = page.lines[0]
    assert (first.attempt, first.node, first.stream, first.level) == (2, 0, "stderr", "error")
    assert first.text == "a2 n0 step 0" and first.t == timestamp(t0)
    assert page.complete and not page.more and page.prev is None
    assert page.job_status == "SUCCEEDED" and page.attempts == 2
    assert texts(query_logs(store, job.id, node=1, attempt=1))[0] == "a1 n1 step 0"
    assert page.to_dict()["lines"][0]["text"] == "a2 n0 step 0"


def test_filters(logs):
    store, job, t0 = logs
    errors = query_logs(store, job.id, level="error")
    assert texts(errors) == [f"a2 n0 step {i}" for i in (0, 25, 50, 75)]
    several = query_logs(store, job.id, level=["error", "warning"])
    assert len(several.lines) == 12  # 0, 10, 20, ..., 90 and 25, 75
    assert texts(query_logs(store, job.id, level="warn,error")) == texts(several)
    needles = query_logs(store, job.id, q="needle")
    assert texts(needles) == [f"a2 n0 step {i} Needle" for i in (7, 37, 67, 97)]
    assert texts(query_logs(store, job.id, q="NEEDLE", level="info")) == texts(needles)
    assert texts(query_logs(store, job.id, q="needle", level="error")) == []
    # the prefix (time, level, stream) is not searched
    assert texts(query_logs(store, job.id, q="out")) == []
    assert texts(query_logs(store, job.id, q="2025")) == []
    window = query_logs(store, job.id, since=t0 + 10, until=t0 + 13)
    assert texts(window) == ["a2 n0 step 10", "a2 n0 step 11", "a2 n0 step 12"]
    iso = query_logs(store, job.id, since=timestamp(t0 + 98), q="step")
    assert texts(iso) == ["a2 n0 step 98", "a2 n0 step 99"]
    with pytest.raises(InvalidQuery, match="level must be"):
        query_logs(store, job.id, level="loud")
    with pytest.raises(InvalidQuery, match="not a time"):
        query_logs(store, job.id, since="yesterday")
    with pytest.raises(InvalidQuery, match="has 2 nodes"):
        query_logs(store, job.id, node=2)
    with pytest.raises(InvalidQuery, match="no attempt 3"):
        query_logs(store, job.id, attempt=3)


def test_pages_positions_and_tail(logs):
    store, job, _ = logs
    first = query_logs(store, job.id, limit=30)
    assert len(first.lines) == 30 and first.more
    second = query_logs(store, job.id, limit=30, after=first.next)
    assert texts(second)[0] == "a2 n0 step 30"
    assert second.prev is not None
    back = query_logs(store, job.id, limit=10, before=second.prev)
    assert texts(back) == [f"a2 n0 step {i}" for i in range(20, 30)]
    # a line's pos continues right after it
    after_line = query_logs(store, job.id, limit=1, after=first.lines[4].pos)
    assert texts(after_line) == ["a2 n0 step 5"]
    tail = query_logs(store, job.id, tail=True, limit=3)
    assert texts(tail) == ["a2 n0 step 97 Needle", "a2 n0 step 98", "a2 n0 step 99"]
    assert tail.more and tail.prev is not None
    tail_errors = query_logs(store, job.id, tail=True, limit=2, level="error")
    assert texts(tail_errors) == ["a2 n0 step 50", "a2 n0 step 75"]
    with pytest.raises(InvalidQuery, match="not a log position"):
        query_logs(store, job.id, after="garbage")
    with pytest.raises(InvalidQuery, match="not the start of a line"):
        query_logs(store, job.id, after="2:0:7")
    with pytest.raises(InvalidQuery, match="node 0's log"):
        query_logs(store, job.id, node=1, after=first.next)


def test_following_goes_on_into_the_next_attempt(logs):
    store, job, _ = logs
    end_of_first = query_logs(store, job.id, attempt=1).next
    page = query_logs(store, job.id, after=end_of_first, limit=5)
    assert (page.lines[0].attempt, page.lines[0].text) == (2, "a2 n0 step 0")
    # with an attempt given, it stays there
    assert query_logs(store, job.id, attempt=1, after=end_of_first).lines == []


def test_lines_written_after_a_page_are_seen_after_its_next(tmp_path):
    store = JobStore.for_data_dir(tmp_path)
    job = new_job(store)
    store.mark_running(job.id)
    store.start_attempt(job.id, 1)
    empty = query_logs(store, job.id)
    assert empty.lines == [] and not empty.complete
    writer = LogWriter(log_path(tmp_path, job.id, 1, 0))
    writer.write("stdout", [("info", "one"), ("info", "two")])
    page = query_logs(store, job.id, after=empty.next)
    assert texts(page) == ["one", "two"]
    writer.write("stderr", [("error", "three")])
    assert texts(query_logs(store, job.id, after=page.next)) == ["three"]
    assert query_logs(store, job.id, after=query_logs(store, job.id).next).lines == []
    writer.close()


def test_downloads(logs, tmp_path):
    store, job, _ = logs
    everything = b"".join(download_logs(store, job.id, attempt=1, node=1))
    assert everything == log_path(store.data_dir, job.id, 1, 1).read_bytes()
    errors = b"".join(download_logs(store, job.id, level="error", q="step 5"))
    assert errors.decode().splitlines()[0].endswith("a2 n0 step 50")
    assert len(errors.decode().splitlines()) == 1
    written = download_to(store, job.id, tmp_path / "out")
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in written) == [
        f"{job.id}/attempt_{a}/node_{n}.log" for a in (1, 2) for n in (0, 1)
    ]
    only = download_to(store, job.id, tmp_path / "only", attempts=[1], nodes=[0], q="needle")
    (path,) = only
    assert [line[PREFIX:] for line in path.read_text().splitlines()] == [
        f"a1 n0 step {i} Needle" for i in (7, 37, 67, 97)
    ]


def test_non_ascii_search(tmp_path):
    store = JobStore.for_data_dir(tmp_path)
    job = new_job(store)
    store.start_attempt(job.id, 1)
    with LogWriter(log_path(tmp_path, job.id, 1, 0)) as writer:
        writer.write(
            "stdout", [("info", "Température ÉLEVÉE"), ("info", "损失 0.5"), ("info", "x")]
        )
    assert texts(query_logs(store, job.id, q="élevée")) == ["Température ÉLEVÉE"]
    assert texts(query_logs(store, job.id, q="TEMPÉRATURE")) == ["Température ÉLEVÉE"]
    assert texts(query_logs(store, job.id, q="损失")) == ["损失 0.5"]


def test_a_million_line_log_is_filtered_completely(tmp_path):
    """1 M lines (122 MB): text + level finds every match, in order. How fast is the business
    of bench/workload_logs.py (target 0.5 s, typically ~0.1 s): a timed assertion here fails
    on a loaded machine without saying anything about the code."""
    store = JobStore.for_data_dir(tmp_path)
    job = new_job(store)
    store.start_attempt(job.id, 1)
    with LogWriter(log_path(tmp_path, job.id, 1, 0)) as writer:
        for block in range(1000):
            batch = [
                ("info", f"step {block * 1000 + i} loss 0.1 lr 3e-4 throughput 1234 samples/s")
                for i in range(999)
            ]
            writer.write("stdout", batch)
            if block % 250 == 0:  # 4 errors, spread over the file, and a decoy at info
                writer.write("stderr", [("error", f"CUDA out of memory at block {block}")])
            else:
                writer.write("stdout", [("info", "memory ok")])
    page = query_logs(store, job.id, q="out of MEMORY", level="error")
    assert texts(page) == [f"CUDA out of memory at block {b}" for b in (0, 250, 500, 750)]
    assert query_logs(store, job.id, q="step 999998").lines[0].text.startswith("step 999998 ")


def test_a_full_disk_keeps_lines_in_memory_then_writes_them_in_order(tmp_path, monkeypatch):
    """While writes fail for want of space the lines wait in memory and go out in order once
    there is room; past the memory kept for them they are counted, and a WARN line says how
    many were lost, where they would have been."""
    import errno

    from jupyter_air.logs import logfile

    full = {"on": False}
    real_write = os.write

    def write(fd, data):
        if full["on"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(logfile.os, "write", write)
    monkeypatch.setattr(logfile, "MAX_PENDING_BYTES", 4096)
    path = tmp_path / "node-0.log"
    writer = LogWriter(path)
    writer.write("stdout", [(INFO, "before")])
    full["on"] = True
    for k in range(20):
        writer.write("stdout", [(INFO, f"waiting {k}")])
    assert writer.full == f"no space left on {tmp_path}" and not writer.overflowing
    assert path.read_text().count("\n") == 1 and writer.stats.lines == 1
    full["on"] = False
    assert writer.flush()  # a tick while the command is quiet
    texts = [line[PREFIX:] for line in path.read_text().splitlines()]
    assert texts == ["before"] + [f"waiting {k}" for k in range(20)]
    assert writer.full is None and writer.stats.lines == 21

    full["on"] = True
    for k in range(200):  # far past 4 KiB
        writer.write("stderr", [(ERROR, f"Error {k}: " + "x" * 40)])
    assert writer.overflowing
    kept = writer.pending_bytes
    assert 0 < kept <= 4096
    full["on"] = False
    writer.write("stdout", [(INFO, "after")])
    lines = path.read_text().splitlines()
    waited = [line for line in lines[21:] if "Error " in line]
    assert [int(line[PREFIX:].split()[1].rstrip(":")) for line in waited] == list(
        range(len(waited))
    )  # the first ones, in order
    marker = lines[21 + len(waited)]
    assert marker.startswith("WARN ") and marker[PREFIX:] == (
        f"[jupyter-air] {200 - len(waited)} lines lost here: no space left on {tmp_path}"
    )
    assert lines[-1][PREFIX:] == "after"
    assert writer.stats.lines == len(lines) and writer.stats.bytes == path.stat().st_size
    assert writer.stats.errors == len(waited) and writer.stats.warnings == 1
    writer.close()
