"""What kernels and terminals of this Jupyter server are told, without touching the server
process's own environment.

Kernels get the variables through the server's kernel manager: every ``start_kernel`` call (a
notebook's session, ``POST api/kernels``, a restart reuses what the start got) has them added to
the environment it was given (the server's, by default). Terminals get them through the
terminal manager's ``extra_env``, which terminado adds to every new terminal's environment. The
Jupyter server's own process keeps its environment as it was: its MLflow queries send the
tracking server's token themselves (``mlflow_queries.py``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any


class KernelEnvironment:
    """Adds ``variables`` to what kernels (and terminals) of one Jupyter server start with."""

    def __init__(self, variables: Mapping[str, str]) -> None:
        self.variables = dict(variables)
        self._kernel_manager: Any = None
        self._terminal_manager: Any = None
        self._terminal_before: dict[str, str | None] = {}

    def environment(self, given: Mapping[str, str] | None) -> dict[str, str]:
        """A kernel's environment: what it was given (the server's when nothing), plus ours."""
        base = os.environ if given is None else given
        return {**base, **self.variables}

    def install_kernels(self, kernel_manager: Any) -> None:
        """Wrap ``kernel_manager.start_kernel`` (this instance only) so that every kernel it
        starts gets the variables."""
        if kernel_manager is None or self._kernel_manager is not None:
            return
        start: Callable[..., Awaitable[str]] = kernel_manager.start_kernel

        @functools.wraps(start)
        async def start_kernel(*args: Any, **kwargs: Any) -> str:
            kwargs["env"] = self.environment(kwargs.get("env"))
            return await start(*args, **kwargs)

        kernel_manager.start_kernel = start_kernel
        self._kernel_manager = kernel_manager

    def install_terminals(self, terminal_manager: Any) -> None:
        """Add the variables to a terminado terminal manager's ``extra_env``."""
        if terminal_manager is None or self._terminal_manager is not None:
            return
        extra = getattr(terminal_manager, "extra_env", None)
        if extra is None:
            extra = terminal_manager.extra_env = {}
        self._terminal_before = {name: extra.get(name) for name in self.variables}
        extra.update(self.variables)
        self._terminal_manager = terminal_manager

    def uninstall(self) -> None:
        manager, self._kernel_manager = self._kernel_manager, None
        if manager is not None and "start_kernel" in vars(manager):
            del manager.start_kernel  # back to the class's method
        terminals, self._terminal_manager = self._terminal_manager, None
        if terminals is not None:
            for name, value in self._terminal_before.items():
                if value is None:
                    terminals.extra_env.pop(name, None)
                else:
                    terminals.extra_env[name] = value
