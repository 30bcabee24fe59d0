"""The NVML backend against a faithful pynvml fake: values, NotSupported, lost GPUs, no driver."""

from __future__ import annotations

import logging
import os
import sys

import pytest
from fake_nvml import NOT_SUPPORTED, UNKNOWN, FakeGpu, FakeNvml, MiB, three_gpus
from import_support import assert_light_import

from jupyter_air.telemetry import Sampler
from jupyter_air.telemetry.nvml import NvmlBackend


def sampler_for(fake: FakeNvml) -> Sampler:
    return Sampler(NvmlBackend(nvml=fake), node="node-a")


def test_three_gpus_report_their_values_and_not_supported_is_null():
    fake = three_gpus()
    sampler = sampler_for(fake)
    sample = sampler.sample()

    assert sample["node"] == "node-a"
    assert [g["index"] for g in sample["gpus"]] == [0, 1, 2]
    g0, g1, g2 = sample["gpus"]
    assert g0["util_pct"] == 87.0
    assert g0["mem_util_pct"] == 40.0
    assert g0["mem_used_mb"] == 30_000.0
    assert g0["mem_total_mb"] == 40_960.0
    assert g0["temp_c"] == 71.0
    assert g0["power_w"] == 312.5
    assert g0["power_limit_w"] == 400.0
    assert g0["lost"] is False
    # GPU 1 has no temperature sensor: null, never 0, and the rest of the GPU still reports
    assert g1["temp_c"] is None
    assert g1["util_pct"] == 5.0
    # a truly idle GPU is 0, not null
    assert g2["util_pct"] == 0.0
    assert g2["mem_used_mb"] == 0.0

    info = sampler.info()
    assert info["backend"] == "nvml"
    assert info["reason"] is None
    assert info["driver_version"] == "560.35.03"
    assert [d["uuid"] for d in info["devices"]] == [g.uuid for g in fake.gpus]
    assert info["devices"][0]["name"] == "NVIDIA A100-SXM4-40GB"
    assert info["devices"][0]["mem_total_mb"] == 40_960.0


def test_host_metrics_come_with_every_sample():
    sample = sampler_for(three_gpus()).sample()
    host = sample["host"]
    assert host["mem_total_mb"] > 0
    assert 0 < host["mem_used_mb"] <= host["mem_total_mb"]
    assert host["cpu_pct"] is not None and 0 <= host["cpu_pct"] <= 100


def test_lost_gpu_is_marked_and_the_others_keep_reporting():
    fake = three_gpus()
    sampler = sampler_for(fake)
    sampler.sample()
    fake.gpus[1].lost = True
    fake.gpus[0].util = (55, 10)

    sample = sampler.sample()
    g0, g1, g2 = sample["gpus"]
    assert g1["lost"] is True
    assert g1["util_pct"] is None and g1["mem_used_mb"] is None and g1["temp_c"] is None
    assert g1["processes"] == []
    assert g0["lost"] is False and g0["util_pct"] == 55.0
    assert g2["lost"] is False and g2["temp_c"] == 35.0


def test_not_supported_utilisation_and_memory_are_null():
    # MIG slices have no utilisation; unified-memory machines report memory as NotSupported
    fake = FakeNvml([FakeGpu(util=NOT_SUPPORTED, mem=NOT_SUPPORTED, power_mw=NOT_SUPPORTED)])
    (gpu,) = sampler_for(fake).sample()["gpus"]
    assert gpu["util_pct"] is None and gpu["mem_util_pct"] is None
    assert gpu["mem_used_mb"] is None and gpu["mem_total_mb"] is None
    assert gpu["power_w"] is None
    assert gpu["temp_c"] == 60.0


def test_other_errors_are_null_and_logged_once(caplog):
    fake = FakeNvml([FakeGpu(temp=UNKNOWN)])
    sampler = sampler_for(fake)
    with caplog.at_level(logging.WARNING, logger="jupyter_air.telemetry.nvml"):
        for _ in range(3):
            (gpu,) = sampler.sample()["gpus"]
            assert gpu["temp_c"] is None
            assert gpu["util_pct"] == 50.0
    assert len([r for r in caplog.records if "temperature" in r.getMessage()]) == 1


def test_nvml_is_initialised_once_on_first_sample():
    fake = three_gpus()
    sampler = sampler_for(fake)
    assert fake.total_calls == 0  # creating the sampler touches nothing
    for _ in range(3):
        sampler.sample()
    assert fake.calls["nvmlInit"] == 1
    sampler.close()
    assert fake.calls["nvmlShutdown"] == 1


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (FakeNvml.NVML_ERROR_DRIVER_NOT_LOADED, "driver is installed but not loaded"),
        (FakeNvml.NVML_ERROR_LIBRARY_NOT_FOUND, "No NVIDIA driver found"),
        (FakeNvml.NVML_ERROR_NO_PERMISSION, "No permission"),
    ],
)
def test_no_driver_gives_backend_none_with_reason_and_host_metrics(code, words, caplog):
    fake = FakeNvml([FakeGpu()], init_error=code)
    sampler = sampler_for(fake)
    with caplog.at_level(logging.WARNING):
        samples = [sampler.sample() for _ in range(5)]
    info = sampler.info()
    assert info["backend"] == "none"
    assert words in info["reason"]
    assert info["devices"] == []
    assert all(s["gpus"] == [] for s in samples)
    assert all(s["host"]["mem_total_mb"] > 0 for s in samples)
    # tried once, no retry loop and no warning spam
    assert fake.calls["nvmlInit"] == 1
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_missing_nvidia_ml_py_gives_backend_none(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml → ImportError
    sampler = Sampler(NvmlBackend(), node="n")
    sample = sampler.sample()
    assert sample["gpus"] == []
    assert sampler.info()["backend"] == "none"
    assert "nvidia-ml-py is not installed" in sampler.info()["reason"]


def test_driver_with_no_gpus_gives_backend_none():
    sampler = sampler_for(FakeNvml([]))
    sampler.sample()
    assert sampler.info()["backend"] == "none"
    assert "reports no GPUs" in sampler.info()["reason"]


def test_processes_are_merged_described_and_attributed_to_their_kernel():
    me = os.getpid()
    gone = 4_000_000  # above any pid_max: a host pid not visible here (containers)
    fake = FakeNvml([FakeGpu(compute=[(me, 1024 * MiB), (gone, 512 * MiB)], graphics=[(me, None)])])
    owner = {"kernel_id": "k-1", "kernel_name": "python3", "path": "nb/train.ipynb"}
    # the owner is this process's parent: a descendant of a kernel belongs to that kernel
    (gpu,) = sampler_for(fake).sample(owners={os.getppid(): owner})["gpus"]
    by_pid = {p["pid"]: p for p in gpu["processes"]}
    assert set(by_pid) == {me, gone}
    mine = by_pid[me]
    assert mine["gpu_mem_mb"] == 1024.0
    assert mine["name"] and mine["command"] and "python" in mine["command"].lower()
    assert mine["user"]
    assert mine["kernel"] == owner
    hidden = by_pid[gone]
    assert hidden["gpu_mem_mb"] == 512.0
    assert hidden["name"] is None and hidden["kernel"] is None


def test_unavailable_process_memory_is_null():
    fake = FakeNvml([FakeGpu(compute=[(os.getpid(), None)])])
    (gpu,) = sampler_for(fake).sample()["gpus"]
    assert gpu["processes"][0]["gpu_mem_mb"] is None


def test_import_starts_nothing():
    assert_light_import(
        "import jupyter_air, jupyter_air.telemetry, jupyter_air.server.app", {"pynvml"}
    )
