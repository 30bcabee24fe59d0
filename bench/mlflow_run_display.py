"""Time from `mlflow.start_run()` in a warm kernel to its run display arriving, against plain
MLflow (`start_run` without jupyter-air) in the same kernel and run, on a real tracking server.

The jupyter-air figure is measured at the client, from sending the cell to receiving the
`application/vnd.jupyter-air.run+json` display on IOPub; the peer figure from sending the same
cell to its execute reply (plain MLflow displays nothing).

    python bench/mlflow_run_display.py [--runs 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from jupyter_client.manager import start_new_kernel

from jupyter_air.server.mlflow_process import READY, EmbeddedMlflow
from jupyter_air.tracking.display import MIME_TYPE


def run_cell(client, code: str, want_display: bool, timeout: float = 60) -> float:
    start = time.perf_counter()
    msg_id = client.execute(code)
    seen_display = seen_reply = None
    while seen_display is None if want_display else seen_reply is None:
        msg = client.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        if kind in ("display_data", "update_display_data") and MIME_TYPE in msg["content"]["data"]:
            seen_display = seen_display or time.perf_counter()
        if kind == "error":
            raise RuntimeError("\n".join(msg["content"]["traceback"]))
        if kind == "status" and msg["content"]["execution_state"] == "idle":
            seen_reply = time.perf_counter()
            if want_display and seen_display is None:
                raise RuntimeError("the cell ended without a run display")
    return ((seen_display if want_display else seen_reply) - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        server = EmbeddedMlflow(Path(folder) / "mlflow")
        server.start()
        while server.state != READY:
            time.sleep(0.1)
        root = Path(folder) / "root"
        root.mkdir()
        env = {
            **os.environ,
            **server.env(),  # its URI and token
            "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
            "JUPYTER_AIR_MLFLOW_UI": "/air/mlflow/",
            "JUPYTER_AIR_ROOT_DIR": str(root),
            "JPY_SESSION_NAME": str(root / "bench.ipynb"),
        }
        manager, client = start_new_kernel(kernel_name="python3", env=env)
        try:
            run_cell(client, "import mlflow; mlflow.set_experiment('display-bench')", False)
            # warm: one run of each kind first
            plain = "with mlflow.start_run(): pass"
            run_cell(client, plain, False)
            ours, ours_cell, peer = [], [], []
            for _ in range(args.runs):
                peer.append(run_cell(client, plain, False))
            run_cell(client, "%load_ext jupyter_air", False)
            run_cell(client, "mlflow.start_run(); mlflow.end_run()", True)
            for _ in range(args.runs):
                ours.append(run_cell(client, "mlflow.start_run(); mlflow.end_run()", True))
                ours_cell.append(run_cell(client, plain, False))
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
            server.stop()
    med_ours, med_peer = statistics.median(ours), statistics.median(peer)
    print(f"mlflow.start_run() in a warm kernel ({args.runs} runs each)")
    print(f"  jupyter-air: start_run to run display shown  median {med_ours:6.1f} ms")
    med_cell = statistics.median(ours_cell)
    print(f"  jupyter-air: start_run + end_run cell done   median {med_cell:6.1f} ms")
    print(f"  plain MLflow: start_run + end_run cell done  median {med_peer:6.1f} ms")
    print(f"  whole cell, ratio jupyter-air / plain MLflow {med_cell / med_peer:.2f}")


if __name__ == "__main__":
    main()
