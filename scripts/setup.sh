#!/usr/bin/env bash
# Sets up .venv with jupyter-air installed in development mode (Python editable install, the
# labextension linked into the environment) and builds the frontend. Safe to re-run: the
# installs only happen again when pyproject.toml, package.json or yarn.lock changed.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "jupyter-air needs Python 3.10 or newer ($python is $("$python" --version 2>&1))." >&2
  exit 1
fi
if ! command -v node >/dev/null; then
  echo "jupyter-air needs Node.js 20 or newer to build its frontend (node not found)." >&2
  exit 1
fi

[ -x .venv/bin/python ] || "$python" -m venv .venv
export PATH="$PWD/.venv/bin:$PATH"

stamp=.venv/.jupyter-air-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ package.json -nt "$stamp" ] \
   || [ yarn.lock -nt "$stamp" ] || [ ! -d node_modules ]; then
  echo "==> Installing Python packages into .venv"
  # --no-compile throughout: pip would byte-compile every module of every package (torch's
  # thousands, a minute of CPU) at install; Python compiles the ones a process imports, once,
  # on first use (scripts/env.sh and `make lab` let it keep them where PYTHONDONTWRITEBYTECODE
  # is set).
  # JupyterLab first: it provides jlpm.
  pip install --quiet --no-compile --disable-pip-version-check "jupyterlab>=4.4,<5" "jupyter-builder>=1.2,<2"
  # the npm packages download while pip installs (one waits on the network, the other on disk)
  echo "==> Installing npm packages (in the background: .venv/jlpm-install.log)"
  jlpm install >.venv/jlpm-install.log 2>&1 &
  npm_pid=$!
  trap 'kill "$npm_pid" 2>/dev/null || true' EXIT
  echo "==> Installing jupyter-air (editable) with its test dependencies"
  # the development link (below) points the environment's labextension at the source tree; an
  # install through it would write install.json into jupyter_air/labextension and break the next
  # build, so the link goes first
  link=.venv/share/jupyter/labextensions/jupyter-air
  if [ -L "$link" ]; then rm "$link"; fi
  rm -f jupyter_air/labextension/install.json
  # torch (the `torch` extra) pinned: 2.13.0 is a CPU build on these machines, where a newer
  # release would pull a multi-GB CUDA build
  pip install --quiet --no-compile --disable-pip-version-check "torch==2.13.0"
  # Ray (the `ray` extra): the test suite runs a real multi-node Ray cluster on loopback. The
  # editable install's own frontend build is skipped: the build below makes the same one.
  SKIP_JUPYTER_BUILDER=1 pip install --quiet --no-compile --disable-pip-version-check -e ".[test,ray]"
  if ! wait "$npm_pid"; then
    cat .venv/jlpm-install.log
    echo "jlpm install failed (above)" >&2
    exit 1
  fi
  trap - EXIT
  touch "$stamp"
fi

echo "==> Writing the API's JSON Schema and TypeScript types from its models"
python scripts/api_types.py

echo "==> Building the frontend"
jlpm build
jupyter labextension develop --overwrite . >/dev/null 2>&1
