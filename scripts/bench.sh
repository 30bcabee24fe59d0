#!/usr/bin/env bash
# Benchmarks (figures, not pass/fail): server-side GPU telemetry, then the panel's render time in
# Chromium. `--screenshot` instead regenerates the README screenshot (docs/img/gpu-panel.png).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/install-chromium.sh
export PATH="$PWD/.venv/bin:$PATH"
test_home="$PWD/.jupyter-test"
export JUPYTER_CONFIG_DIR="$test_home/config" JUPYTER_DATA_DIR="$test_home/data"
export JUPYTER_RUNTIME_DIR="$test_home/runtime" JUPYTER_PREFER_ENV_PATH=1
unset JUPYTER_AIR_GPU_BACKEND JUPYTER_AIR_SIMULATED_GPUS
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
echo "==> Panel render time in Chromium"
cd ui-tests
jlpm playwright test --config playwright.bench.config.js panel-render
