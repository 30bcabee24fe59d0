#!/usr/bin/env bash
# Runs every test suite: lint (ruff, mypy, prettier, eslint), jest, Galata in Chromium, then pytest
# last so that its closing "N passed" line ends the output.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/install-chromium.sh
source scripts/env.sh

echo "==> Lint"
ruff check .
ruff format --check .
mypy
jlpm lint:check

echo "==> jest"
jlpm test

echo "==> Galata (Chromium)"
(
  cd ui-tests
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 jlpm install
  if ! CI=${CI:-} jlpm playwright test; then
    for log in ../.jupyter-test/ui-server*.log; do
      echo "==> last lines of $log"
      tail -n 40 "$log"
    done
    exit 1
  fi
)

# the tests on the loopback Ray cluster first, on their own: its three nodes start reliably on
# two cores only when nothing else runs; then everything else on two workers (most of those
# tests wait on processes they start), last, so its closing line ends the output
echo "==> pytest: on the Ray cluster"
python -m pytest -p no:cacheprovider -m ray
echo "==> pytest"
python -m pytest -p no:cacheprovider -m "not ray" -n "${AIR_TEST_WORKERS:-2}"
