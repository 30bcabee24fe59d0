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

# The tests on the loopback Ray cluster run one at a time and mostly wait on the cluster; the
# browser tests mostly wait on Chromium and their servers; the other pytest tests (on two
# workers) mostly wait on the processes they start. The three run side by side, each into its
# log. The Ray tests go first, and the others start once the cluster is up (three nodes start
# reliably on two cores when little else runs). Each log is printed when its part ended, the
# other pytest tests' last, so that their closing line ends the output.
echo "==> pytest on the Ray cluster, Galata (Chromium) and the other pytest tests, side by side"
echo "    (logs: .jupyter-test/pytest-ray.log, galata.log and pytest.log; each printed as it ends)"
ready=.jupyter-test/ray-cluster-ready
rm -rf "$ready" .jupyter-test/scratch
declare -A pids=()
stop_parts() { # an interrupted run stops every part, and the Ray cluster with its tests
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
}
trap stop_parts EXIT
# each part in its own process group (setsid), so that stopping it stops all it started
AIR_RAY_READY_FILE="$PWD/$ready" setsid python -m pytest -p no:cacheprovider \
  -m "ray and not rig" --durations=10 >.jupyter-test/pytest-ray.log 2>&1 &
pids[ray]=$!
while [ ! -e "$ready" ] && kill -0 "${pids[ray]}" 2>/dev/null; do sleep 1; done
part "Ray cluster start"
(cd ui-tests && CI=${CI:-} exec setsid jlpm playwright test) >.jupyter-test/galata.log 2>&1 &
pids[galata]=$!
setsid python -m pytest -p no:cacheprovider -m "not ray" -n "${AIR_TEST_WORKERS:-2}" \
  --dist loadgroup --durations=20 >.jupyter-test/pytest.log 2>&1 &
pids[pytest]=$!
failed=""
ended() { # ended NAME: the part's time since the cluster was up, when the three started
  timings+=("$(printf '  %-26s %4d s' "$1" $((SECONDS - part_start)))")
}
if wait "${pids[galata]}"; then ended "Galata"; else failed="Galata"; fi
unset 'pids[galata]'
echo "==> Galata (Chromium)" && cat .jupyter-test/galata.log
if [[ $failed == *Galata* ]]; then
  for log in .jupyter-test/ui-server*.log; do
    echo "==> last lines of $log"
    tail -n 40 "$log"
  done
fi
if wait "${pids[ray]}"; then ended "pytest on the Ray cluster"; else failed="$failed pytest-on-the-Ray-cluster"; fi
unset 'pids[ray]'
echo "==> pytest on the Ray cluster" && cat .jupyter-test/pytest-ray.log
status=0
wait "${pids[pytest]}" || status=$?
unset 'pids[pytest]'
trap - EXIT
[ "$status" = 0 ] && ended "pytest (the others)"
part "the three side by side"
echo "==> time per part (the indented ones side by side, from the Ray cluster's start)"
printf '  %s\n' "${timings[@]}"
if [ -n "$failed" ]; then echo "==> failed:$failed" >&2; fi
echo "==> pytest"
cat .jupyter-test/pytest.log
[ -z "$failed" ] && exit "$status"
exit 1
