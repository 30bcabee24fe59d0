#!/usr/bin/env bash
# Runs every test suite: lint (ruff, mypy, prettier, eslint) beside jest, Galata in Chromium,
# then pytest last so that its closing "N passed" line ends the output. Before that last part it
# prints how long each earlier part took (pytest's own closing line gives the last one's time).
set -euo pipefail
cd "$(dirname "$0")/.."

declare -a timings=()
part_start=$SECONDS
part() { # part NAME: the time since the last mark goes to the part just ended
  timings+=("$(printf '%-28s %4d s' "$1" $((SECONDS - part_start)))")
  part_start=$SECONDS
}

bash scripts/setup.sh
bash scripts/install-chromium.sh
source scripts/env.sh
part "setup"

# lint and jest side by side (each mostly one core), each into its log, printed when both ended
echo "==> Lint and jest"
lint() { ruff check . && ruff format --check . && mypy && jlpm lint:check; }
lint >.jupyter-test/lint.log 2>&1 &
lint_pid=$!
jlpm test >.jupyter-test/jest.log 2>&1 &
jest_pid=$!
failed=""
wait "$lint_pid" || failed="lint"
wait "$jest_pid" || failed="$failed jest"
echo "==> Lint" && cat .jupyter-test/lint.log
echo "==> jest" && cat .jupyter-test/jest.log
if [ -n "$failed" ]; then
  echo "==> failed:$failed" >&2
  exit 1
fi
part "lint and jest"

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
part "Galata"

# the tests on the loopback Ray cluster first, on their own: its three nodes start reliably on
# two cores only when nothing else runs; then everything else on two workers (most of those
# tests wait on processes they start), last, so its closing line ends the output
echo "==> pytest: on the Ray cluster"
python -m pytest -p no:cacheprovider -m "ray and not rig" --durations=10
part "pytest on the Ray cluster"

echo "==> time per part so far"
printf '  %s\n' "${timings[@]}"
echo "==> pytest"
python -m pytest -p no:cacheprovider -m "not ray" -n "${AIR_TEST_WORKERS:-2}" --durations=20
