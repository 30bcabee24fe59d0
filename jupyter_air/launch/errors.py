"""The errors ``.distributed()`` raises, shared by the kernel and the rank processes.

They exist so that a person reading a notebook cell sees one error that says what went wrong,
where (which rank, which argument) and what to do, instead of torch elastic's
``ChildFailedError`` without a traceback. This module imports nothing heavy: ranks unpickle
these classes.
"""

from __future__ import annotations


class DistributedError(RuntimeError):
    """Base class of the launcher's own errors."""


class DeviceError(DistributedError, ValueError):
    """The devices asked for do not exist here (more GPUs than visible, several nodes)."""


class TorchNotInstalledError(DistributedError, ImportError):
    """``.distributed()`` needs torch, which is an extra of jupyter-air."""


class NotPicklableError(DistributedError, TypeError):
    """The function or one of its arguments cannot be sent to the ranks; nothing was started."""

    def __init__(self, message: str, culprit: str) -> None:
        super().__init__(message)
        self.culprit = culprit


class RemoteTraceback(Exception):
    """The traceback of a rank, raised as the cause of the rank's own exception."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


class RankFailedError(DistributedError):
    """A rank failed and its own exception could not be raised here: killed by a signal, exited
    without an exception, or raised one that cannot be unpickled in the kernel."""

    def __init__(
        self,
        message: str,
        *,
        rank: int,
        world_size: int,
        exitcode: int | None = None,
        signal: str | None = None,
        exception_type: str | None = None,
        run_dir: str | None = None,
    ) -> None:
        super().__init__(message)
        self.rank = rank
        self.world_size = world_size
        self.exitcode = exitcode
        self.signal = signal
        self.exception_type = exception_type
        self.run_dir = run_dir


class DistributedTimeoutError(DistributedError, TimeoutError):
    """The call ran past its ``timeout``; every rank was stopped."""


class LauncherError(DistributedError):
    """The launcher itself failed (torch elastic could not start the ranks)."""


class ExperimentChangedError(DistributedError):
    """``mlflow.set_experiment`` was called inside a rank, which MLflow then refuses to log
    from ("active experiment ID does not match environment run ID")."""
