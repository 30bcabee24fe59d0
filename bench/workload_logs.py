"""Workload logs: capture throughput and query time, against peers measured in the same run.

1. Capture: a real child process prints N lines as fast as it can; jupyter-air reads its
   stdout/stderr pipes and writes every line with a timestamp and a level (capture.py). Peer: the
   same child writing straight into a file (no timestamps, no levels) — the child's own speed.
2. Query over the 1 M stored lines (logs/scan.py scans the flat file): a text search that matches
   a few lines (the whole file is scanned), the same with a level filter, a level alone, a first
   page, the tail, a time window. Peers, over the same lines: `grep -c -i` (GNU grep), Python's
   `re` (IGNORECASE) over the mapped file, and SQLite — the alternative format considered — with
   the lines in a table (`instr(lower(text), ?)`, with and without an index on the level) and in
   an FTS5 trigram index; their load times are printed too.

    python bench/workload_logs.py [--lines 1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import mmap
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jupyter_air.logs.capture import StreamCapture
from jupyter_air.logs.logfile import PREFIX, LogWriter
from jupyter_air.logs.query import query_logs
from jupyter_air.workloads.paths import log_path, new_job_id
from jupyter_air.workloads.store import JobStore

CHILD = r"""
import sys
n = int(sys.argv[1])
out, err = sys.stdout, sys.stderr
for i in range(n):
    if i % 1000 == 999:
        err.write(f"2025-11-29 10:00:00,000 - trainer - WARNING - step {i}: loss spiked\n")
    elif i % 250_000 == 123_456:
        err.write(f"ERROR: CUDA out of memory at step {i} (tried to allocate 2.00 GiB)\n")
    else:
        out.write(f"epoch {i // 10000} step {i} loss {1 / (i + 1):.6f} lr 0.0003 "
                  f"throughput {1000 + i % 977} samples/s grad_norm {(i % 89) / 7:.3f}\n")
out.flush(); err.flush()
"""


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def capture(n: int, folder: Path) -> tuple[float, float, Path]:
    """(our lines/s, peer lines/s, the log file)."""
    path = folder / "node_0.log"
    start = time.perf_counter()
    writer = LogWriter(path)
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(n)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    readers = [
        StreamCapture(os.dup(proc.stdout.fileno()), writer, "stdout").start(),
        StreamCapture(os.dup(proc.stderr.fileno()), writer, "stderr").start(),
    ]
    proc.stdout.close()
    proc.stderr.close()
    proc.wait()
    for reader in readers:
        reader.join()
    writer.close()
    ours = time.perf_counter() - start
    assert writer.stats.lines == n, writer.stats

    start = time.perf_counter()
    with open(folder / "plain.log", "wb") as plain:
        subprocess.run(
            [sys.executable, "-c", CHILD, str(n)], stdout=plain, stderr=plain, check=True
        )
    peer = time.perf_counter() - start
    return n / ours, n / peer, path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n, repeat = args.lines, args.repeat
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ours, peer, path = capture(n, folder)
        size_mb = path.stat().st_size / 1e6
        print(f"Capture of {n:,} lines from a real child process ({size_mb:.0f} MB stored)")
        print(f"  jupyter-air (timestamp + level per line): {ours:>12,.0f} lines/s")
        print(f"  peer: the child writing to a file        : {peer:>12,.0f} lines/s")
        print(f"  ratio: {ours / peer:.2f}x of the child's own speed\n")

        store = JobStore.for_data_dir(folder / "data")
        job_id = new_job_id()
        store.create_job(
            id=job_id,
            experiment_name="bench",
            run_name="bench",
            command="x",
            compute={"num_nodes": 1},
            max_retries=0,
            spec={},
        )
        store.start_attempt(job_id, 1)
        target = log_path(store.data_dir, job_id, 1, 0)
        target.parent.mkdir(parents=True)
        os.replace(path, target)
        job = store.get_job(job_id)
        first_t = target.read_bytes()[6:30].decode()

        def q(**kw):
            return lambda: query_logs(store, job_id, job=job, **kw)

        cases = [
            ("text, few matches (full scan)", q(q="out of memory")),
            ("text + level error", q(q="out of memory", level="error")),
            ("text, no match (full scan)", q(q="no such text anywhere")),
            ("text + level warning, 1000 lines", q(q="spiked", level="warning")),
            ("level error only", q(level="error")),
            ("first page (1000 lines)", q()),
            ("tail 1000", q(tail=True)),
            ("text, non-ASCII term (full scan)", q(q="grüße")),
            ("time window + text", q(since=first_t, until="2999-01-01T00:00:00Z", q="zzz")),
        ]
        print(f"Queries over {n:,} stored lines (median of {repeat}; limit 1000)")
        for label, fn in cases:
            seconds, page = timed(fn, repeat)
            print(f"  {label:<36} {seconds * 1000:8.1f} ms  ({len(page.lines)} lines)")

        print("\nPeers over the same lines")
        raw = target.read_bytes()
        seconds, _ = timed(
            lambda: subprocess.run(
                ["grep", "-c", "-i", "out of memory", str(target)], capture_output=True
            ),
            repeat,
        )
        print(f"  {'grep -c -i (GNU grep, whole file)':<36} {seconds * 1000:8.1f} ms")
        pattern = re.compile(rb"out of memory", re.IGNORECASE)
        with open(target, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as m:
            seconds, _ = timed(lambda: sum(1 for _ in pattern.finditer(m)), repeat)
        print(f"  {'re.IGNORECASE over the mapped file':<36} {seconds * 1000:8.1f} ms")
        sqlite_peer(raw, folder, repeat)


def sqlite_peer(raw: bytes, folder: Path, repeat: int) -> None:
    rows = []
    for line in raw.decode().splitlines():
        rows.append((line[6:30], line[:5].strip(), line[31:34], line[PREFIX:]))
    conn = sqlite3.connect(folder / "logs.db")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE lines (t TEXT, level TEXT, stream TEXT, text TEXT)")
    start = time.perf_counter()
    with conn:
        conn.executemany("INSERT INTO lines VALUES (?, ?, ?, ?)", rows)
    load = time.perf_counter() - start
    print(f"  SQLite table: load {len(rows) / load:,.0f} lines/s")
    text = "SELECT * FROM lines WHERE instr(lower(text), ?) > 0 LIMIT 1000"
    seconds, _ = timed(lambda: conn.execute(text, ("out of memory",)).fetchall(), repeat)
    print(f"  {'  text (instr(lower(text)))':<36} {seconds * 1000:8.1f} ms")
    both = text.replace("WHERE", "WHERE level = 'ERROR' AND")
    seconds, _ = timed(lambda: conn.execute(both, ("out of memory",)).fetchall(), repeat)
    print(f"  {'  text + level, no index':<36} {seconds * 1000:8.1f} ms")
    start = time.perf_counter()
    conn.execute("CREATE INDEX lines_level ON lines (level)")
    index = time.perf_counter() - start
    seconds, _ = timed(lambda: conn.execute(both, ("out of memory",)).fetchall(), repeat)
    print(f"  {'  text + level, level index':<36} {seconds * 1000:8.1f} ms  (index {index:.1f} s)")
    try:
        start = time.perf_counter()
        conn.execute("CREATE VIRTUAL TABLE fts USING fts5(text, tokenize='trigram')")
        with conn:
            conn.execute("INSERT INTO fts (rowid, text) SELECT rowid, text FROM lines")
        build = time.perf_counter() - start
        fts = "SELECT rowid FROM fts WHERE text LIKE ? LIMIT 1000"
        seconds, _ = timed(lambda: conn.execute(fts, ("%out of memory%",)).fetchall(), repeat)
        print(f"  {'  FTS5 trigram, text':<36} {seconds * 1000:8.1f} ms  (build {build:.1f} s)")
    except sqlite3.OperationalError as error:
        print(f"  FTS5 trigram: not available ({error})")
    conn.close()
    size = sum(p.stat().st_size for p in folder.glob("logs.db*")) / 1e6
    print(f"  SQLite files: {size:.0f} MB (the flat log: {len(raw) / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
