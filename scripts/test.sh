#!/usr/bin/env bash
# Runs every test suite: lint (ruff, prettier, eslint), jest, Galata in Chromium, then pytest
# last so that its closing "N passed" line ends the output.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/install-chromium.sh
source scripts/env.sh

# Keep the tests away from the machine's own Jupyter configuration, kernels and data.
test_home="$PWD/.jupyter-test"
mkdir -p "$test_home"
export JUPYTER_CONFIG_DIR="$test_home/config" JUPYTER_DATA_DIR="$test_home/data"
export JUPYTER_RUNTIME_DIR="$test_home/runtime" JUPYTER_PREFER_ENV_PATH=1
export IPYTHONDIR="$test_home/ipython" MPLBACKEND=Agg
unset JUPYTER_AIR_GPU_BACKEND JUPYTER_AIR_SIMULATED_GPUS MLFLOW_TRACKING_URI

echo "==> Lint"
ruff check .
ruff format --check .
jlpm lint:check

echo "==> jest"
jlpm test

echo "==> Galata (Chromium)"
(
  cd ui-tests
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 jlpm install
  CI=${CI:-} jlpm playwright test
)

echo "==> pytest"
python -m pytest -p no:cacheprovider
