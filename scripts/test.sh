#!/usr/bin/env bash
# Runs every test suite: lint (ruff, mypy, prettier, eslint) beside jest; then the pytest tests
# on a loopback Ray cluster beside Galata in Chromium, and the other pytest tests, whose log is
# printed last so that its closing "N passed" line ends the output. Before that log it prints
# how long each part took.
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

# lint and jest side by side (each mostly one core) while the browser tests' npm packages
# install, each into its log, printed when all ended
echo "==> Lint and jest"
lint() { ruff check . && ruff format --check . && mypy && jlpm lint:check; }
lint >.jupyter-test/lint.log 2>&1 &
lint_pid=$!
jlpm test >.jupyter-test/jest.log 2>&1 &
jest_pid=$!
(cd ui-tests && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 jlpm install) >.jupyter-test/ui-install.log 2>&1 &
ui_pid=$!
failed=""
wait "$lint_pid" || failed="lint"
wait "$jest_pid" || failed="$failed jest"
wait "$ui_pid" || failed="$failed ui-tests-install"
echo "==> Lint" && cat .jupyter-test/lint.log
echo "==> jest" && cat .jupyter-test/jest.log
if [[ $failed == *ui-tests-install* ]]; then cat .jupyter-test/ui-install.log; fi
if [ -n "$failed" ]; then
  echo "==> failed:$failed" >&2
  exit 1
fi
part "lint and jest"

# The tests on the loopback Ray cluster run one at a time and mostly wait on the cluster, and
# the browser tests mostly wait on Chromium and their servers (a CPU hog beside them slows them
# by a tenth): side by side, they share the two cores. The Ray tests go first, and Galata starts
# once the cluster is up (three nodes start reliably on two cores when little else runs). The
# other pytest tests (two workers, mostly waiting on the processes they start) start when Galata
# ended, beside the Ray tests' last ones. Each part writes its own log, printed when it ended,
# the other pytest tests' last, so that their closing line ends the output.
echo "==> pytest on the Ray cluster, beside Galata (Chromium), then the other pytest tests"
echo "    (logs: .jupyter-test/pytest-ray.log, galata.log, pytest.log; each printed when it ends)"
ready=.jupyter-test/ray-cluster-ready
rm -f "$ready"
declare -A pids=()
stop_parts() { # an interrupted run stops every part (and the Ray tests their cluster)
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
}
trap stop_parts EXIT
ended() { # ended NAME: a part that ran side by side, its time since the Ray cluster was up
  timings+=("$(printf '  %-26s %4d s' "$1" $((SECONDS - part_start)))")
}
# each part in a process group of its own (setsid), so that stopping it stops all it started
AIR_RAY_READY_FILE="$PWD/$ready" setsid python -m pytest -p no:cacheprovider \
  -m "ray and not rig" --durations=10 >.jupyter-test/pytest-ray.log 2>&1 &
pids[ray]=$!
while [ ! -e "$ready" ] && kill -0 "${pids[ray]}" 2>/dev/null; do sleep 1; done
part "Ray cluster start"
failed=""
(cd ui-tests && CI=${CI:-} exec setsid jlpm playwright test) >.jupyter-test/galata.log 2>&1 &
pids[galata]=$!
if wait "${pids[galata]}"; then ended "Galata"; else failed="Galata"; fi
unset 'pids[galata]'
setsid python -m pytest -p no:cacheprovider -m "not ray" -n "${AIR_TEST_WORKERS:-2}" \
  --dist loadgroup --durations=20 >.jupyter-test/pytest.log 2>&1 &
pids[pytest]=$!
echo "==> Galata (Chromium)" && cat .jupyter-test/galata.log
if [ -n "$failed" ]; then
  for log in .jupyter-test/ui-server*.log; do
    echo "==> last lines of $log"
    tail -n 40 "$log"
  done
fi
if wait "${pids[ray]}"; then
  ended "pytest on the Ray cluster"
else
  failed="$failed pytest-on-the-Ray-cluster"
fi
unset 'pids[ray]'
echo "==> pytest on the Ray cluster" && cat .jupyter-test/pytest-ray.log
status=0
wait "${pids[pytest]}" || status=$?
unset 'pids[pytest]'
trap - EXIT
part "Galata, then the other pytest"
echo "==> time per part (the indented ones ran side by side, timed from the Ray cluster's start)"
printf '  %s\n' "${timings[@]}"
if [ -n "$failed" ]; then echo "==> failed:$failed" >&2; fi
echo "==> pytest (the other tests)"
cat .jupyter-test/pytest.log
if [ -n "$failed" ]; then exit 1; fi
exit "$status"
