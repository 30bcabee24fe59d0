"""Training in another process (a kernel running `.distributed()`, a workload) keeps the
server's GPU sampling awake through a hold file, and a crashed holder cannot keep it awake."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from telemetry_support import telemetry_config, wait_until

from jupyter_air.telemetry.hold_files import HoldFile, holds_folder, live_holds


@pytest.fixture
def air_config(tmp_path) -> dict:
    return telemetry_config(tmp_path, gpu_poll_interval=0.1, gpu_idle_timeout=0.3)


async def test_a_hold_file_keeps_sampling_awake_without_any_client(jp_serverapp, tmp_path):
    gpu = jp_serverapp.web_app.settings["jupyter_air"]["gpu"]
    assert gpu.poll_loop.samples_taken == 0  # nobody asked: nothing sampled

    # where kernels are told to put holds (JUPYTER_AIR_DATA_DIR, see test_workload_api)
    hold = HoldFile.create("distributed train() — run baseline", data_dir=tmp_path / "air")
    assert hold.path is not None and hold.path.parent == holds_folder(tmp_path / "air")
    assert await wait_until(lambda: gpu.poll_loop.held_by == [hold.reason])
    taken = gpu.poll_loop.samples_taken
    # five intervals on, past the idle timeout (0.3 s) without any client: still sampling
    assert await wait_until(lambda: gpu.poll_loop.samples_taken >= taken + 5)
    assert not gpu.poll_loop.paused and gpu.poll_loop.held_by == [hold.reason]

    hold.release()
    assert await wait_until(lambda: gpu.poll_loop.held_by == [])
    assert await wait_until(lambda: gpu.poll_loop.paused)


async def test_the_api_says_what_holds_sampling(jp_fetch, jp_serverapp, tmp_path):
    gpu = jp_serverapp.web_app.settings["jupyter_air"]["gpu"]
    with HoldFile.create("workload w-42", data_dir=tmp_path / "air"):
        assert await wait_until(lambda: gpu.poll_loop.held_by == ["workload w-42"])
        body = json.loads((await jp_fetch("air", "api", "gpu")).body)
    assert body["held_by"] == ["workload w-42"]


def test_a_hold_of_a_dead_process_is_ignored_and_removed(tmp_path):
    folder = holds_folder(tmp_path)
    folder.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (folder / f"{dead.pid}-x.json").write_text(json.dumps({"pid": dead.pid, "reason": "gone"}))
    (folder / "broken.json").write_text("{not json")
    with HoldFile.create("mine", data_dir=tmp_path) as mine:
        assert live_holds(tmp_path) == {mine.path.name: "mine"}
    assert not (folder / f"{dead.pid}-x.json").exists()
    assert live_holds(tmp_path) == {}


def test_without_a_jupyter_air_server_holding_does_nothing(monkeypatch, tmp_path):
    monkeypatch.delenv("JUPYTER_AIR_DATA_DIR", raising=False)
    with HoldFile.create("somewhere else") as hold:
        assert hold.path is None
