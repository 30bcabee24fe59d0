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
stop_if_failed() { # stop_if_failed "PARTS": ends the run when a part failed, saying which
  if [ -n "$1" ]; then
    echo "==> failed:$1" >&2
    exit 1
  fi
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
stop_if_failed "$failed"
part "lint and jest"

# The tests on the loopback Ray cluster run one at a time, and the browser tests mostly wait on
# Chromium and their servers (a CPU hog beside them slows them by a tenth): side by side, they
# share the two cores. The Ray tests go first, and Galata starts once the cluster is up (three
# nodes start reliably on two cores when little else runs). Each writes its own log, printed
# when both ended. Everything else runs last, on three workers (most of those tests wait on the
# processes they start: a third keeps both cores busy), so that its closing line ends the output.
echo "==> pytest on the Ray cluster, beside Galata (Chromium)"
ready=.jupyter-test/ray-cluster-ready
rm -f "$ready"
AIR_RAY_READY_FILE="$PWD/$ready" python -m pytest -p no:cacheprovider -m "ray and not rig" \
  --durations=10 >.jupyter-test/pytest-ray.log 2>&1 &
ray_pid=$!
trap 'kill -TERM "$ray_pid" 2>/dev/null || true' EXIT # an interrupted run stops the cluster too
while [ ! -e "$ready" ] && kill -0 "$ray_pid" 2>/dev/null; do sleep 1; done
failed=""
(cd ui-tests && CI=${CI:-} jlpm playwright test) >.jupyter-test/galata.log 2>&1 || failed="Galata"
wait "$ray_pid" || failed="$failed pytest-on-the-Ray-cluster"
trap - EXIT
echo "==> Galata (Chromium)" && cat .jupyter-test/galata.log
if [[ $failed == *Galata* ]]; then
  for log in .jupyter-test/ui-server*.log; do
    echo "==> last lines of $log"
    tail -n 40 "$log"
  done
fi
echo "==> pytest on the Ray cluster" && cat .jupyter-test/pytest-ray.log
stop_if_failed "$failed"
part "Ray pytest beside Galata"

# The tests on hosts that share nothing (network namespaces, a real `ray start` on each host:
# tests/netns_rig.py) run on their own: three more Ray nodes beside the loopback cluster and
# Chromium would crowd two cores.
echo "==> pytest on hosts that share nothing (network namespaces)"
failed=""
python -m pytest -p no:cacheprovider -m rig --durations=10 >.jupyter-test/pytest-rig.log 2>&1 \
  || failed="pytest-on-hosts-that-share-nothing"
cat .jupyter-test/pytest-rig.log
stop_if_failed "$failed"
part "rig pytest"

echo "==> time per part so far"
printf '  %s\n' "${timings[@]}"
echo "==> pytest"
python -m pytest -p no:cacheprovider -m "not ray" -n "${AIR_TEST_WORKERS:-3}" --dist loadgroup \
  --durations=20
