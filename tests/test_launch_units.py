"""The launcher's parts that need no rank process: devices (NVML faked), options, pickling with
the culprit named, rank output into the cell (prefixes, progress bars), which failure is the
cause, how a rank's traceback names notebook cells, and torch missing."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
import threading

import pytest
from fake_nvml import FakeGpu, FakeNvml, three_gpus

from jupyter_air.launch import devices
from jupyter_air.launch.decorator import DistributedFunction, distributed
from jupyter_air.launch.errors import DeviceError, NotPicklableError
from jupyter_air.launch.failures import RankFailure, cell_names, collect_failures
from jupyter_air.launch.output import RankOutput, last_segment
from jupyter_air.launch.payload import argument_labels, build_payload, load_call, read_payload
from jupyter_air.launch.restarts import set_round_aside
from jupyter_air.launch.rundir import RunDir, record_stops


# devices --------------------------------------------------------------------------------------
def plan(gpus, nvml, **env):
    return devices.plan_devices(gpus, 1, nvml=nvml, environ=env)


def test_every_visible_gpu_by_default():
    chosen = plan(None, three_gpus())
    assert (chosen.nproc, chosen.kind, chosen.cuda_visible_devices) == (3, "gpu", "0,1,2")
    assert chosen.note is None


def test_gpus_n_takes_the_first_n_visible_in_cuda_order():
    chosen = plan(2, three_gpus(), CUDA_VISIBLE_DEVICES="2,0,1")
    assert chosen.cuda_visible_devices == "2,0"
    by_uuid = plan(None, three_gpus(), CUDA_VISIBLE_DEVICES="GPU-cccc,GPU-aaaa")
    assert by_uuid.cuda_visible_devices == "GPU-cccc,GPU-aaaa"


def test_cuda_visible_devices_stops_at_the_first_invalid_entry():
    assert plan(None, three_gpus(), CUDA_VISIBLE_DEVICES="1,9,0").cuda_visible_devices == "1"


def test_more_gpus_than_visible_is_an_error_naming_them():
    with pytest.raises(DeviceError) as caught:
        plan(4, three_gpus(), CUDA_VISIBLE_DEVICES="0,2")
    message = str(caught.value)
    assert "gpus=4" in message and "sees 2 GPUs" in message
    assert "0 (NVIDIA A100-SXM4-40GB), 2 (NVIDIA A100-SXM4-40GB)" in message
    assert "CUDA_VISIBLE_DEVICES=0,2" in message


def test_no_gpu_runs_cpu_ranks_and_says_why():
    no_driver = FakeNvml([], init_error=12)  # NVML_ERROR_LIBRARY_NOT_FOUND
    chosen = plan(3, no_driver)
    assert (chosen.nproc, chosen.kind, chosen.cuda_visible_devices) == (3, "cpu", None)
    assert "running 3 ranks on the CPU (gloo)" in chosen.note
    single = plan(None, FakeNvml([]))
    assert single.nproc == 1 and "running 1 rank on the CPU" in single.note
    assert "gpus=N" in single.note
    hidden = plan(2, three_gpus(), CUDA_VISIBLE_DEVICES="")
    assert hidden.kind == "cpu" and "hides every GPU" in hidden.note


def test_the_cpu_note_is_said_once_per_kernel(capsys, monkeypatch):
    monkeypatch.setattr(devices, "_said", set())
    devices.say_once("note a")
    devices.say_once("note a")
    devices.say_once("note b")
    assert capsys.readouterr().out == "note a\nnote b\n"


def test_several_nodes_without_a_cluster_say_how_to_connect_one(monkeypatch):
    for name in ("RAY_ADDRESS", "JUPYTER_AIR_CLUSTER"):
        monkeypatch.delenv(name, raising=False)
    two = distributed(nodes=2)(lambda: 0)  # decorating is fine: the cluster may come later
    with pytest.raises(DeviceError) as info:
        two.distributed()
    message = str(info.value)
    assert message.startswith("nodes=2 runs on several machines: connect a Ray cluster")
    assert "RAY_ADDRESS" in message and "docs/clusters.md" in message
    with pytest.raises(ValueError, match="gpus must be"):
        distributed(gpus=0)


def test_the_decorator_takes_every_option_launch_options_declares():
    """``LaunchOptions`` declares the options: ``@distributed``'s signature, its typed overload
    and its help name each one with the same default (``resume`` is given to ``.distributed()``),
    and ``with_options`` checks what it changes."""
    import dataclasses
    import inspect
    import typing

    from jupyter_air.launch.options import LaunchOptions

    names = [f.name for f in dataclasses.fields(LaunchOptions) if f.name != "resume"]
    defaults = {f.name: f.default for f in dataclasses.fields(LaunchOptions)}
    expected = {name: None if name == "env" else defaults[name] for name in names}
    signatures = [inspect.signature(distributed)]
    signatures += [inspect.signature(f) for f in typing.get_overloads(distributed)]
    with_keywords = 0
    for signature in signatures:
        keywords = {
            name: p.default for name, p in signature.parameters.items() if p.kind is p.KEYWORD_ONLY
        }
        if keywords:
            with_keywords += 1
            assert keywords == expected
    assert with_keywords == 2
    assert all(
        f"{name}:" in distributed.__doc__ or f"{name}," in distributed.__doc__ for name in names
    )
    changed = distributed(gpus=1, timeout=2, env={"A": "b"})(lambda: 0).with_options(
        remote=True, max_retries=1
    )
    assert changed.launch_options == LaunchOptions(
        gpus=1, timeout=2.0, env={"A": "b"}, remote=True, max_retries=1
    )
    with pytest.raises(ValueError, match="max_retries needs remote=True"):
        changed.with_options(remote=False)
    for wrong in (-1, True, 1.5, 101):
        with pytest.raises(ValueError, match="max_restarts must be an integer from 0 to 100"):
            distributed(max_restarts=wrong)
    with pytest.raises(ValueError, match=r"max_restarts needs nodes=1 \(got nodes=2\)"):
        distributed(nodes=2, max_restarts=1)


def test_keep_nodes_takes_seconds_and_falls_back_to_its_variable(monkeypatch):
    from jupyter_air.launch.kept_nodes import keep_seconds

    assert distributed(nodes=2, keep_nodes=5)(lambda: 0).launch_options.keep_nodes == 5.0
    for bad in (-1, True, "60", 3601):
        with pytest.raises(ValueError, match="keep_nodes must be a number of seconds from 0"):
            distributed(nodes=2, keep_nodes=bad)
    monkeypatch.delenv("JUPYTER_AIR_KEEP_NODES_S", raising=False)
    assert keep_seconds(None) == 60.0 and keep_seconds(0.0) == 0.0
    monkeypatch.setenv("JUPYTER_AIR_KEEP_NODES_S", "0")
    assert keep_seconds(None) == 0.0 and keep_seconds(7.0) == 7.0
    monkeypatch.setenv("JUPYTER_AIR_KEEP_NODES_S", "soon")
    assert keep_seconds(None) == 60.0


# the decorator --------------------------------------------------------------------------------
def test_decorator_forms_and_local_call():
    @distributed
    def plain(x: int) -> int:
        """Doc."""
        return x + 1

    @distributed(gpus=2, output="rank0", timeout=5)
    def configured(x):
        return x * 2

    assert isinstance(plain, DistributedFunction)
    assert plain(1) == 2 and configured(2) == 4  # still runs here
    assert plain.__name__ == "plain" and plain.__doc__ == "Doc."
    assert plain.__wrapped__.__name__ == "plain"
    assert configured.launch_options.gpus == 2
    assert configured.launch_options.timeout == 5.0
    assert configured.with_options(gpus=1).launch_options.gpus == 1
    assert configured.launch_options.gpus == 2
    for bad in ({"output": "rank1"}, {"timeout": 0}, {"grace_period": -1}, {"env": {"A": 1}}):
        with pytest.raises((ValueError, TypeError)):
            distributed(**bad)


# pickling ---------------------------------------------------------------------------------------
def test_arguments_are_named_as_the_signature_names_them():
    def fn(a, b, *rest, key=1, **extra):
        return a

    labels, keywords = argument_labels(fn, (1, 2, 3), {"key": 2, "other": 3})
    assert labels == ["argument 'a'", "argument 'b'", "positional argument 3 (*rest[0])"]
    assert keywords == {"key": "argument 'key'", "other": "keyword argument 'other' (**extra)"}
    with pytest.raises(TypeError, match=r"fn.distributed\(\): missing a required argument"):
        argument_labels(fn, (), {})


def test_unpicklable_argument_is_named():
    def train(model, lock=None):
        return model

    with pytest.raises(NotPicklableError) as caught:
        build_payload(train, (1,), {"lock": threading.Lock()})
    assert caught.value.culprit == "argument 'lock'"
    message = str(caught.value)
    assert "the argument 'lock' (a _thread.lock) cannot be sent to the ranks" in message
    assert "Nothing was started" in message


def test_unpicklable_closure_and_global_are_named():
    lock = threading.Lock()

    def uses_closure():
        return lock

    with pytest.raises(NotPicklableError) as caught:
        build_payload(uses_closure, (), {})
    assert caught.value.culprit == "the closure variable 'lock' it uses"

    namespace = {"__name__": "__main__", "handle": io.BufferedReader(io.BytesIO(b"x"))}
    exec("def uses_global():\n    return handle.read()\n", namespace)
    with pytest.raises(NotPicklableError) as caught:
        build_payload(namespace["uses_global"], (), {})
    assert caught.value.culprit == "the global variable 'handle' it uses"
    assert "uses_global cannot be sent to the ranks" in str(caught.value)


def test_payload_round_trip_keeps_file_names_for_tracebacks(tmp_path):
    namespace = {"__name__": "__main__", "FACTOR": 3}
    code = compile("def scale(x):\n    return x * FACTOR\n", "/tmp/ipykernel_1/42.py", "exec")
    exec(code, namespace)
    payload = read_payload(build_payload(namespace["scale"], (2,), {}).dumps())
    call = load_call(payload)
    assert call.function(*call.args) == 6
    assert call.function.__code__.co_filename == "/tmp/ipykernel_1/42.py"


# output ------------------------------------------------------------------------------------------
class Collect(io.StringIO):
    pass


def two_ranks(tmp_path, mode: str) -> tuple[RunDir, RankOutput, Collect, Collect]:
    """The output of two ranks shown in ``mode``, into stdout and stderr streams kept here."""
    run_dir = RunDir(tmp_path)
    out, err = Collect(), Collect()
    return run_dir, RankOutput(run_dir, 2, mode, stdout=lambda: out, stderr=lambda: err), out, err


def write(run_dir, rank, stream, text):
    path = run_dir.stdout(rank) if stream == "out" else run_dir.stderr(rank)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as file:
        file.write(text)


def test_lines_are_prefixed_and_progress_bars_stay_readable(tmp_path):
    run_dir, output, out, err = two_ranks(tmp_path, "all")
    write(run_dir, 0, "out", "hello\nwor")
    write(run_dir, 1, "out", "from one\n")
    output.pump()
    assert out.getvalue() == "[rank 0] hello\n[rank 1] from one\n"
    write(run_dir, 0, "out", "ld\n")
    write(run_dir, 0, "err", "\r 10%|#    |\r 20%|##   |")
    output.pump()
    assert out.getvalue().endswith("[rank 0] world\n")
    assert err.getvalue() == "[rank 0]  20%|##   |"  # the bar, updated in place
    write(run_dir, 0, "err", "\r 30%|###  |")
    output.pump()
    assert err.getvalue().endswith("\r[rank 0]  30%|###  |")
    write(run_dir, 1, "err", "warning from one\n")  # another rank speaks: the bar's line closes
    output.pump()
    assert err.getvalue().endswith("|\n[rank 1] warning from one\n")
    write(run_dir, 0, "err", "\r100%|#####|\n")
    output.pump(final=True)
    assert err.getvalue().endswith("[rank 1] warning from one\n[rank 0] 100%|#####|\n")
    output.pump(final=True)  # nothing is shown twice
    assert err.getvalue().count("100%") == 1


def test_a_restarts_new_log_files_are_read_after_the_old_ones_to_their_end(tmp_path):
    """Before torch elastic starts the ranks again, the last round's files are set aside; the
    kernel shows what was left unread of them (a line without its newline too), then the new
    round's from their start, and the round's error and result are no longer taken as this
    round's."""
    run_dir = RunDir(tmp_path)
    out, err = Collect(), Collect()
    output = RankOutput(run_dir, 2, "all", stdout=lambda: out, stderr=lambda: err)
    write(run_dir, 1, "out", "epoch 1\n")
    output.pump()
    write(run_dir, 1, "out", "epoch 2\nlast words")
    run_dir.error(1).write_bytes(b"not read")
    run_dir.result(0).write_bytes(b"stale")
    set_round_aside(run_dir, 1, [0, 1])
    write(run_dir, 1, "out", "round 1\n")
    for _ in range(3):
        output.pump()
    assert (
        out.getvalue()
        == "[rank 1] epoch 1\n[rank 1] epoch 2\n[rank 1] last words\n[rank 1] round 1\n"
    )
    assert not run_dir.error(1).exists() and not run_dir.result(0).exists()
    assert (run_dir.round_dir(1) / "result-0.pkl").read_bytes() == b"stale"
    (entry,) = run_dir.read_json(run_dir.restarts)["restarts"]
    assert entry["restart"] == 1 and entry["failed"] == {"1": "an error"}


def test_rank0_mode_shows_other_ranks_only_when_they_fail(tmp_path):
    run_dir, output, out, err = two_ranks(tmp_path, "rank0")
    write(run_dir, 0, "out", "zero\n")
    write(run_dir, 1, "out", "one\n")
    write(run_dir, 1, "err", "boom\n")
    output.pump(final=True)
    assert out.getvalue() == "[rank 0] zero\n"
    output.show_tail(1)
    assert out.getvalue().endswith("[rank 1] one\n")
    assert err.getvalue() == "[rank 1] boom\n"


def test_last_segment():
    assert last_segment("a\rb\r") == "b"
    assert last_segment("plain") == "plain"


# failures -------------------------------------------------------------------------------------
def test_the_cause_comes_before_ranks_that_noticed_a_peer_leave(tmp_path):
    import pickle

    run_dir = RunDir(tmp_path)
    secondary = {"time": 10.0, "secondary": True, "traceback": "", "type": "RuntimeError"}
    (tmp_path / "error-0.pkl").write_bytes(pickle.dumps(secondary))
    outcome = {
        "failures": {
            "0": {"exitcode": 1, "timestamp": 10},
            "1": {"exitcode": -9, "signal": "SIGKILL", "timestamp": 11},
        }
    }
    failures = collect_failures(run_dir, 2, outcome)
    assert [f.rank for f in failures] == [1, 0]
    assert isinstance(failures[0], RankFailure) and failures[0].signal == "SIGKILL"


def error_record(rank: int, time: float, **fields) -> bytes:
    import pickle

    record = {"rank": rank, "time": time, "traceback": "", "type": "builtins.ValueError"}
    return pickle.dumps({**record, **fields})


def test_within_one_second_the_rank_with_an_error_record_is_the_cause(tmp_path):
    """Elastic stamps failures in whole seconds, error records to the sub-second: rank 0,
    stopped in the same second as rank 1 raised, is not the cause for sorting first."""
    (tmp_path / "error-1.pkl").write_bytes(error_record(1, 100.8))
    outcome = {
        "failures": {
            "1": {"exitcode": 1, "timestamp": 100},
            "0": {"exitcode": -15, "signal": "SIGTERM", "timestamp": 100},
        }
    }
    failures = collect_failures(RunDir(tmp_path), 2, outcome)
    assert [f.rank for f in failures] == [1, 0]
    # a second later is later, record or not
    outcome["failures"]["0"]["timestamp"] = 99
    assert [f.rank for f in collect_failures(RunDir(tmp_path), 2, outcome)] == [0, 1]


def test_a_rank_the_launch_stopped_is_never_the_cause(tmp_path):
    """Rank 1 killed itself (no error record); rank 0 was stopped by elastic in the same
    second, and a rank the kernel stopped an hour earlier is still not the cause."""
    run_dir = RunDir(tmp_path)
    outcome = {
        "failures": {
            "1": {"exitcode": -9, "signal": "SIGKILL", "timestamp": 100},
            "0": {"exitcode": -15, "signal": "SIGTERM", "timestamp": 100},
            "2": {"exitcode": -9, "signal": "SIGKILL", "timestamp": 50},
        }
    }
    assert collect_failures(run_dir, 3, outcome)[0].rank == 2  # nothing recorded: the earliest
    record_stops(run_dir, "agent", [0], "SIGTERM")
    record_stops(run_dir, "driver", [2], "SIGKILL")
    failures = collect_failures(run_dir, 3, outcome)
    assert [(f.rank, f.stopped) for f in failures] == [(1, False), (2, True), (0, True)]


def test_an_error_recorded_before_the_stop_is_the_ranks_own(tmp_path):
    """A rank that raised, then was stopped while it exited, failed on its own; one whose
    error came after the stop (a SIGTERM handler raising) was stopped."""
    import time

    run_dir = RunDir(tmp_path)
    (tmp_path / "error-1.pkl").write_bytes(error_record(1, time.time() - 5))
    record_stops(run_dir, "driver", [0, 1], "SIGKILL")
    (tmp_path / "error-0.pkl").write_bytes(error_record(0, time.time() + 1))
    failures = collect_failures(run_dir, 2, {"failures": {}})
    assert [(f.rank, f.stopped) for f in failures] == [(1, False), (0, True)]


def test_notebook_cells_are_named_as_ipython_names_them(monkeypatch):
    import jupyter_air.launch.failures as failures

    monkeypatch.setattr(failures, "_cell_filenames", lambda: {"/tmp/ipykernel_7/123.py": 4})
    text = 'File "/tmp/ipykernel_7/123.py", line 3, in train\nFile "/x.py", line 1, in f'
    assert cell_names(text) == 'Cell In[4], line 3, in train\nFile "/x.py", line 1, in f'


# torch missing ----------------------------------------------------------------------------------
def test_without_torch_the_error_says_how_to_install_it():
    code = textwrap.dedent(
        """
        import sys
        sys.modules["torch"] = None
        from jupyter_air import distributed
        from jupyter_air.launch.errors import TorchNotInstalledError

        @distributed(gpus=2, mlflow=False)
        def train():
            return 1

        try:
            train.distributed()
        except TorchNotInstalledError as error:
            print("ERROR", error)
        """
    )
    env = {**os.environ, "JUPYTER_AIR_DATA_DIR": "/nonexistent/never-created"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'pip install "jupyter-air[torch]"' in result.stdout
    assert not os.path.exists("/nonexistent/never-created")


def test_a_gpu_nvml_cannot_describe_still_counts_as_cuda_numbers_it():
    lost = FakeNvml([FakeGpu(uuid="GPU-a"), FakeGpu(uuid="GPU-b", lost=True)])
    assert plan(None, lost).cuda_visible_devices == "0,1"
    with pytest.raises(DeviceError, match="1 \\(unknown GPU\\)"):
        plan(3, lost)
