"""Backend choice (config, environment) and the simulated backend's readings."""

from __future__ import annotations

import pytest
from traitlets import TraitError

from jupyter_air.server.app import JupyterAir
from jupyter_air.telemetry import Sampler, create_backend
from jupyter_air.telemetry.models import Sample
from jupyter_air.telemetry.nvml import NvmlBackend
from jupyter_air.telemetry.simulated import SimulatedBackend


def test_auto_is_nvml_and_never_simulated():
    assert isinstance(create_backend("auto"), NvmlBackend)


def test_environment_variable_wins_over_configuration(monkeypatch):
    monkeypatch.setenv("JUPYTER_AIR_GPU_BACKEND", "simulated")
    monkeypatch.setenv("JUPYTER_AIR_SIMULATED_GPUS", "8")
    backend = create_backend("auto", simulated_gpus=2)
    assert isinstance(backend, SimulatedBackend) and backend.count == 8


def test_none_backend_says_it_was_turned_off():
    sampler = Sampler(create_backend("none"), node="n")
    assert sampler.sample()["gpus"] == []
    assert "turned off" in sampler.info()["reason"]


@pytest.mark.parametrize(
    ("env", "value", "message"),
    [
        ("JUPYTER_AIR_GPU_BACKEND", "cuda", "Unknown GPU backend 'cuda'"),
        ("JUPYTER_AIR_SIMULATED_GPUS", "lots", "must be a whole number"),
        ("JUPYTER_AIR_SIMULATED_GPUS", "1000", "between 0 and 64"),
    ],
)
def test_bad_environment_values_are_clear_errors(monkeypatch, env, value, message):
    if env == "JUPYTER_AIR_SIMULATED_GPUS":
        monkeypatch.setenv("JUPYTER_AIR_GPU_BACKEND", "simulated")
    monkeypatch.setenv(env, value)
    with pytest.raises(ValueError, match=message):
        create_backend("auto")


def test_simulated_gpus_change_and_stay_plausible():
    sampler = Sampler(SimulatedBackend(8, seed=1), node="demo")
    samples = [sampler.sample() for _ in range(50)]
    info = sampler.info()
    assert info["backend"] == "simulated"
    assert len(info["devices"]) == 8 and len({d["uuid"] for d in info["devices"]}) == 8
    for s in samples:
        for gpu in s["gpus"]:
            assert 0 <= gpu["util_pct"] <= 100
            assert 0 < gpu["mem_used_mb"] <= gpu["mem_total_mb"]
            assert 20 <= gpu["temp_c"] <= 95
            assert 0 < gpu["power_w"] <= gpu["power_limit_w"]
    utils = {s["gpus"][0]["util_pct"] for s in samples}
    assert len(utils) > 10  # it changes


@pytest.mark.parametrize(
    ("trait", "value"),
    [("gpu_poll_interval", 0), ("gpu_history", -1), ("gpu_idle_timeout", -5)],
)
def test_invalid_settings_are_rejected_with_the_setting_name(trait, value):
    with pytest.raises(TraitError, match=f"JupyterAir.{trait}"):
        JupyterAir(**{trait: value})


def test_simulated_gpus_report_health_without_flags():
    sample = Sampler(SimulatedBackend(2, seed=3), node="demo").sample()
    Sample.model_validate(sample)  # what the panel gets is the contract
    for gpu in sample["gpus"]:
        health = gpu["health"]
        assert health["flags"] == []
        assert 0 < health["sm_clock_mhz"] <= health["sm_clock_max_mhz"]
        assert health["xid_count"] == 0 and health["ecc_uncorrected"] == 0
        assert health["fan_pct"] is None  # not reported: null, never 0
        assert health["retired_pages_sbe"] is None


def test_simulated_faults_on_request_flag_their_gpus(monkeypatch):
    monkeypatch.setenv("JUPYTER_AIR_GPU_BACKEND", "simulated")
    monkeypatch.setenv("JUPYTER_AIR_SIMULATED_GPUS", "5")
    monkeypatch.setenv(
        "JUPYTER_AIR_SIMULATED_FAULTS", "1:xid, 2:ecc,3:thermal,3:hw_slowdown,4:row_remap_failure"
    )
    sample = Sampler(create_backend("auto"), node="demo").sample()
    Sample.model_validate(sample)
    flags = {gpu["index"]: gpu["health"]["flags"] for gpu in sample["gpus"]}
    assert flags == {
        0: [],
        1: ["xid"],
        2: ["ecc_uncorrected"],
        3: ["thermal_throttling", "hw_slowdown"],
        4: ["row_remap_failure"],
    }
    health = {gpu["index"]: gpu["health"] for gpu in sample["gpus"]}
    assert health[1]["xid_count"] == 1 and health[1]["xid_errors"][0]["xid"] == 79
    assert health[2]["ecc_uncorrected"] == 1
    assert {"hw_thermal_slowdown", "hw_slowdown"} <= set(health[3]["throttle_reasons"])
    assert health[4]["row_remap_failure"] is True


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("xid", r"'xid' is not GPU:FAULT"),
        ("a:xid", r"'a:xid' is not GPU:FAULT"),
        ("7:xid", r"'7:xid' names GPU 7, but there are 2 GPUs"),
        ("1:melted", r"'1:melted': unknown fault 'melted'; choose one of xid, ecc"),
    ],
)
def test_bad_simulated_faults_are_clear_errors(monkeypatch, value, message):
    monkeypatch.setenv("JUPYTER_AIR_GPU_BACKEND", "simulated")
    monkeypatch.setenv("JUPYTER_AIR_SIMULATED_FAULTS", value)
    with pytest.raises(ValueError, match=f"JUPYTER_AIR_SIMULATED_FAULTS: {message}"):
        create_backend("auto", simulated_gpus=2)
