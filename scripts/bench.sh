#!/usr/bin/env bash
# Benchmarks (figures, not pass/fail): server-side telemetry, MLflow, logs and launcher, then
# render times in Chromium (the GPU panel; the Logs view on 1 M lines). `--screenshot` instead
# regenerates the README screenshots (docs/img/).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/install-chromium.sh
source scripts/env.sh
(cd ui-tests && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 jlpm install >/dev/null)
mkdir -p docs/img

if [ "${1:-}" = "--screenshot" ]; then
  cd ui-tests
  AIR_UI_GPUS=4 AIR_UI_INTERVAL=1 AIR_UI_HISTORY=7200 \
    jlpm playwright test --config playwright.bench.config.js readme-screenshot
  exit 0
fi

echo "==> Server-side GPU telemetry"
python bench/gpu_telemetry.py
echo "==> Node agents reporting to the server (64 nodes x 8 GPUs)"
python bench/telemetry_ingest.py
echo "==> Node agents: the server's cost at 1, 8, 64 and 512 nodes (old POST vs channel)"
python bench/telemetry_ingest.py --curve
echo "==> Embedded MLflow server"
python bench/mlflow_start.py
python bench/mlflow_run_display.py
echo "==> Workload log capture and search"
python bench/workload_logs.py
echo "==> The cluster's queue: 20 job runs from two data folders"
python bench/ray_queue.py
echo "==> @distributed against torchrun"
python bench/launch.py
echo "==> GPU panel and Logs view in Chromium"
cd ui-tests
jlpm playwright test --config playwright.bench.config.js panel-render logs-render
