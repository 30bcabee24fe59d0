"""Start times of the embedded MLflow server: cold (a new store: schema creation) and warm (an
existing store), measured as the time from spawning `mlflow server` until /health answers.

    python bench/mlflow_start.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from jupyter_air.server.mlflow_process import READY, EmbeddedMlflow


def time_start(data_dir: Path) -> float:
    server = EmbeddedMlflow(data_dir, start_timeout_s=300)
    started = time.monotonic()
    server.start()
    try:
        while server.state != READY:
            if time.monotonic() - started > 300:
                raise RuntimeError(f"not ready after 300 s: {server.status()}")
            time.sleep(0.05)
        return time.monotonic() - started
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cold, warm = [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as folder:
            cold.append(time_start(Path(folder)))
            warm.append(time_start(Path(folder)))
    print("Embedded MLflow server start (spawn to /health answering)")
    for label, times in (("cold (new store)     ", cold), ("warm (existing store)", warm)):
        runs = ", ".join(f"{t:.1f}" for t in times)
        print(f"  {label} median {statistics.median(times):5.1f} s  ({runs})")


if __name__ == "__main__":
    main()
