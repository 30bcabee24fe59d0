"""Backend choice (config, environment) and the simulated backend's readings."""

from __future__ import annotations

import pytest
from traitlets import TraitError

from jupyter_air.server.app import JupyterAir
from jupyter_air.telemetry import Sampler, create_backend
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
