"""The telemetry contract: the sampler's dicts and the pydantic models name the same fields, every
payload has a JSON Schema, and a report must be about one node."""

from __future__ import annotations

import typing

import pytest
from fake_nvml import three_gpus
from pydantic import ValidationError

from jupyter_air.telemetry import Sampler, models, samples
from jupyter_air.telemetry.nvml import NvmlBackend
from jupyter_air.telemetry.simulated import SimulatedBackend

PAIRS = [
    (samples.KernelOwner, models.KernelOwner),
    (samples.RunOwner, models.RunOwner),
    (samples.GpuProcess, models.GpuProcess),
    (samples.XidError, models.XidError),
    (samples.GpuHealth, models.GpuHealth),
    (samples.MigReading, models.MigReading),
    (samples.GpuReading, models.GpuReading),
    (samples.HostReading, models.HostReading),
    (samples.Sample, models.Sample),
    (samples.MigDevice, models.MigDevice),
    (samples.Device, models.Device),
]


@pytest.mark.parametrize(("typed", "model"), PAIRS, ids=[m.__name__ for _, m in PAIRS])
def test_the_sampler_shapes_and_the_models_name_the_same_fields(typed, model):
    assert set(typing.get_type_hints(typed)) == set(model.model_fields)


def test_what_the_samplers_produce_is_valid_against_the_contract():
    for backend in (NvmlBackend(nvml=three_gpus()), SimulatedBackend(4, seed=2)):
        sampler = Sampler(backend, node="node-1")
        sample = models.Sample.model_validate(sampler.sample(owners={}))
        assert sample.node == "node-1" and sample.gpus
        info = models.NodeInfo.model_validate(sampler.info())
        assert info.backend == backend.kind


def test_every_payload_has_a_json_schema():
    for payload in models.PAYLOADS:
        schema = payload.model_json_schema()
        assert schema["type"] == "object" and schema["properties"]


def report(**changes) -> dict:
    base = {
        "node": "n1",
        "agent": {"version": "0.1.0", "interval_s": 10, "started": 1.0},
        "sampling": True,
        "samples": [{"t": 2.0, "node": "n1", "host": {}, "gpus": []}],
    }
    return {**base, **changes}


def test_a_report_is_about_one_node_and_bounded():
    assert models.IngestRequest.model_validate(report()).samples[0].t == 2.0
    with pytest.raises(ValidationError, match=r"samples\.0\.node is 'n2'"):
        models.IngestRequest.model_validate(
            report(samples=[{"t": 2.0, "node": "n2", "host": {}, "gpus": []}])
        )
    with pytest.raises(ValidationError, match="pattern"):
        models.IngestRequest.model_validate(report(node="../etc"))
    with pytest.raises(ValidationError, match="at most 64"):
        models.IngestRequest.model_validate(
            report(samples=[{"t": 2.0, "node": "n1", "host": {}, "gpus": [{"index": 0}] * 65}])
        )
    with pytest.raises(ValidationError):  # NaN cannot go into the history's strict JSON
        models.IngestRequest.model_validate_json(
            '{"node":"n1","agent":{"version":"x","interval_s":1,"started":1},"sampling":true,'
            '"samples":[{"t":NaN,"node":"n1","host":{}}]}'
        )
