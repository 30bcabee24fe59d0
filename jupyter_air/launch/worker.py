"""One rank, started by torch elastic: a fork of the launcher agent (``run_forked``, on Linux)
or ``python -m jupyter_air.launch.worker <run dir>``.

Never a fork of the kernel: it restores the kernel's ``sys.path`` and working folder, loads the
cloudpickled function and arguments, runs the function once and leaves ``result-<rank>.pkl`` or
``error-<rank>.pkl`` in the run folder for the kernel. Rank 0..N-1 get the torchrun environment
(RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, …) from elastic.

Kept light: as its own interpreter it imports neither torch nor mlflow unless the function does.
"""

from __future__ import annotations

import atexit
import io
import os
import pickle
import signal
import sys
import time
import traceback
from typing import Any

import cloudpickle

from ..files import write_atomic, write_json
from .errors import ExperimentChangedError
from .mlflow_guard import MlflowGuard
from .payload import PayloadLoadError, load_call, read_payload, restore_context
from .processes import AGENT_PID_ENV, die_with_parent
from .rundir import RunDir


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m jupyter_air.launch.worker <run dir>", file=sys.stderr)
        return 2
    run_dir = RunDir(argv[0])
    rank = int(os.environ.get("RANK", "0"))
    started = time.time()
    agent = os.environ.get(AGENT_PID_ENV)
    # the agent stops us; if it is killed outright, go with it
    die_with_parent(signal.SIGKILL, int(agent) if agent else None)
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    write_json(
        run_dir.pid(rank), {"pid": os.getpid(), "started": started, "local_rank": local_rank}
    )
    settings = run_dir.read_json(run_dir.launch) or {}
    guard = None
    if settings.get("mlflow_run_id"):
        guard = MlflowGuard(settings["mlflow_run_id"])
        guard.install()
    try:
        payload = read_payload(run_dir.payload.read_bytes())
        restore_context(payload)
        call = load_call(payload)
    except PayloadLoadError as error:
        _write_error(run_dir, rank, error, skip_frames=0)
        return 1
    try:
        value = call.function(*call.args, **call.kwargs)
    except SystemExit as error:
        if error.code in (None, 0):
            value = None
        else:
            _write_error(run_dir, rank, error)
            _send_async_logs(guard)
            return 1
    except BaseException as error:
        explained = guard.explain(error, settings.get("mlflow_experiment")) if guard else None
        if explained is not None:
            replacement = ExperimentChangedError(explained)
            replacement.__cause__ = error
            replacement.__traceback__ = error.__traceback__
            error = replacement
        _write_error(run_dir, rank, error)  # first: the kernel learns of the failure at once
        _send_async_logs(guard)
        return 1
    _send_async_logs(guard)  # before the result: the run may end once every result is there
    try:
        data = dumps_result(value)
    except Exception as error:
        problem = TypeError(
            f"the return value of rank {rank} ({type(value).__qualname__}) cannot be pickled "
            f"back to the kernel: {error}. Return plain values (numbers, lists, dicts, CPU "
            "tensors, a state_dict), or save large objects to a file and return its path."
        )
        _write_error(run_dir, rank, problem, skip_frames=0)
        return 1
    write_atomic(run_dir.result(rank), data)
    _finish_process_group()
    return 0


def run_forked(run_dir: str) -> int:
    """A rank forked from the launcher agent: the signals, ``sys.argv`` and ``__main__`` a rank
    of its own interpreter would have, then ``main``, then the exit handlers (a forked process
    leaves without them). A failure leaves with its exit code (elastic takes a value returned by
    a forked rank for success); success returns 0."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)  # the agent's handlers raise in elastic's loop
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.argv = [__file__, run_dir]
    sys.modules["__main__"] = sys.modules[__name__]
    code = main([run_dir])
    # as its interpreter's end would: the function's exit handlers (a tracker's finish, a
    # flush), and those of what the agent imported, which a rank importing them has as well
    atexit._run_exitfuncs()
    if code:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _send_async_logs(guard: MlflowGuard | None) -> None:
    """What the function logged with ``synchronous=False`` reaches the run now: at interpreter
    exit MLflow's own hooks can no longer send it (its thread pools refuse new work by then)."""
    if guard is not None:
        guard.flush()


def dumps_result(value: Any) -> bytes:
    """Pickle a return value; tensors on a GPU come back as CPU tensors, so that reading the
    result does not initialise CUDA in the kernel."""
    buffer = io.BytesIO()
    pickler = _ResultPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dump(value)
    return buffer.getvalue()


def _identity(value: Any) -> Any:
    return value


class _ResultPickler(cloudpickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(obj, torch.Tensor) and obj.device.type != "cpu":
            cpu = obj.detach().cpu()
            if isinstance(obj, torch.nn.Parameter):
                return torch.nn.Parameter, (cpu, obj.requires_grad)
            return _identity, (cpu,)
        return super().reducer_override(obj)


def _write_error(run_dir: RunDir, rank: int, error: BaseException, skip_frames: int = 1) -> None:
    """``error-<rank>.pkl``: the exception (pickled when it can be), its formatted traceback
    without this module's frame, the rank and the time."""
    tb = error.__traceback__
    for _ in range(skip_frames):
        if tb is not None:
            tb = tb.tb_next
    text = "".join(traceback.format_exception(type(error), error, tb))
    try:
        exception: bytes | None = cloudpickle.dumps(error, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        exception = None
    record = {
        "rank": rank,
        "time": time.time(),
        "type": f"{type(error).__module__}.{type(error).__qualname__}",
        "message": _safe_str(error),
        "traceback": text,
        "exception": exception,
        "secondary": _looks_secondary(error),
    }
    write_atomic(run_dir.error(rank), pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))
    # one line in the rank's log; the traceback is in the error the kernel raises
    summary = (str(record["message"]).splitlines() or [""])[0][:300]
    print(f"{type(error).__name__}: {summary}", file=sys.stderr, flush=True)


def _safe_str(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:
        return repr(error)


def _looks_secondary(error: BaseException) -> bool:
    """Whether the error is a rank noticing that a peer went away (a consequence of another
    rank's failure, not the cause)."""
    text = _safe_str(error).lower()
    peer_gone = any(
        marker in text
        for marker in (
            "connection closed by peer",
            "connection reset by peer",
            "broken pipe",
            "socket closed",
            "the client socket has failed",
            "connection refused",
            "timed out",
            "ncclremoteerror",
        )
    )
    return peer_gone and isinstance(error, RuntimeError)


def _finish_process_group() -> None:
    """Leave torch.distributed cleanly when the function did not (avoids warnings at exit)."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
    except Exception:
        pass


if __name__ == "__main__":
    # run under the module's own name, not as __main__: what this module pickles (the result
    # pickler's helpers) is then found by reference in the kernel
    from jupyter_air.launch.worker import main as worker_main

    sys.exit(worker_main(sys.argv[1:]))
