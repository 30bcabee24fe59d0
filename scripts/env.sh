# Sourced by the test and benchmark scripts: the project's .venv first on PATH, and Jupyter kept
# away from the machine's own configuration, kernels and data.
export PATH="$PWD/.venv/bin:$PATH"
test_home="$PWD/.jupyter-test"
mkdir -p "$test_home"
export JUPYTER_CONFIG_DIR="$test_home/config" JUPYTER_DATA_DIR="$test_home/data"
export JUPYTER_RUNTIME_DIR="$test_home/runtime" JUPYTER_PREFER_ENV_PATH=1
export IPYTHONDIR="$test_home/ipython" MPLBACKEND=Agg
unset JUPYTER_AIR_GPU_BACKEND JUPYTER_AIR_SIMULATED_GPUS MLFLOW_TRACKING_URI
# setup.sh installs without byte-compiling (most modules are never imported); a process compiles
# what it imports once and keeps it, unless told not to write bytecode, as some machines are:
# then every test's interpreter would compile torch and MLflow again (4 s each here)
unset PYTHONDONTWRITEBYTECODE
