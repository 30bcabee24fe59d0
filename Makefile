# The two commands of the quick start:
#   make lab    start JupyterLab with jupyter-air (sets up .venv the first time)
#   make test   run every test suite: lint, jest, Galata in Chromium, then pytest
.PHONY: lab test test-rig setup bench bench-browser screenshot clean

# as root (a container), JupyterLab refuses to start without --allow-root; the environment keeps
# the bytecode it compiles (setup.sh installs without compiling), on machines that say otherwise too
lab:
	@bash scripts/setup.sh
	@PYTHONDONTWRITEBYTECODE= JUPYTER_PREFER_ENV_PATH=1 .venv/bin/jupyter lab $$([ "$$(id -u)" = 0 ] && echo --allow-root) $(ARGS)

test:
	@bash scripts/test.sh

# the tests on hosts that share nothing alone (network namespaces; root; `make test` runs them
# too): docs/clusters.md
test-rig:
	@bash scripts/setup.sh
	@bash -c 'source scripts/env.sh && python -m pytest -p no:cacheprovider -m rig'

setup:
	@bash scripts/setup.sh

bench:
	@bash scripts/bench.sh

screenshot:
	@bash scripts/bench.sh --screenshot

clean:
	rm -rf .venv node_modules ui-tests/node_modules lib jupyter_air/labextension .jupyter-test
