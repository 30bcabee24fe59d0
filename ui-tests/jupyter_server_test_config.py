"""JupyterLab server for the browser tests: Galata's settings, simulated GPUs, short intervals."""

import os

from jupyterlab.galata import configure_jupyter_server

configure_jupyter_server(c)  # noqa: F821 - `c` is the config object Jupyter passes in
c.ServerApp.port = int(os.environ.get("AIR_UI_PORT", "8911"))  # noqa: F821
c.ServerApp.allow_root = True  # noqa: F821
c.KernelSpecManager.allowed_kernelspecs = {"python3"}  # noqa: F821
c.JupyterAir.gpu_backend = "simulated"  # noqa: F821
c.JupyterAir.simulated_gpus = int(os.environ.get("AIR_UI_GPUS", "2"))  # noqa: F821
c.JupyterAir.gpu_poll_interval = float(os.environ.get("AIR_UI_INTERVAL", "2"))  # noqa: F821
c.JupyterAir.gpu_history = float(os.environ.get("AIR_UI_HISTORY", "7200"))  # noqa: F821
c.JupyterAir.gpu_idle_timeout = float(os.environ.get("AIR_UI_IDLE", "15"))  # noqa: F821
# the server of the multi-node tests: its own node's name, and agents lost soon after they stop
if os.environ.get("AIR_UI_NODE_NAME"):
    c.JupyterAir.node_name = os.environ["AIR_UI_NODE_NAME"]  # noqa: F821
c.JupyterAir.agent_lost_after = float(os.environ.get("AIR_UI_LOST_AFTER", "300"))  # noqa: F821
# each test server its own jupyter-air data (its own embedded MLflow store)
c.JupyterAir.data_dir = os.path.join(  # noqa: F821
    os.environ.get("JUPYTER_DATA_DIR", os.path.expanduser("~/.local/share/jupyter")),
    f"air-{c.ServerApp.port}",  # noqa: F821
)
# Galata turns Jupyter's XSRF check off (its helpers send no X-XSRFToken); the server under a
# prefix, driven by plain Playwright through JupyterLab and the MLflow UI, checks it as a real
# server does
if os.environ.get("AIR_UI_XSRF") == "1":
    c.ServerApp.disable_check_xsrf = False  # noqa: F821
