"""GPU health from NVML (against the pynvml fake): clocks against their maximums, decoded throttle
reasons, fan, ECC counts, retired pages, remapped rows, XID events since the sampler started, the
computed flags, and NotSupported as null — never 0."""

from __future__ import annotations

from fake_nvml import NOT_SUPPORTED, UNKNOWN, FakeGpu, FakeNvml, three_gpus

from jupyter_air.telemetry import Sampler
from jupyter_air.telemetry.health import decode_throttle_reasons
from jupyter_air.telemetry.history import wire_form
from jupyter_air.telemetry.models import Sample
from jupyter_air.telemetry.nvml import NvmlBackend


def health_of(fake: FakeNvml, sampler: Sampler | None = None) -> list[dict]:
    sampler = sampler or Sampler(NvmlBackend(nvml=fake), node="n")
    return [gpu["health"] for gpu in sampler.sample()["gpus"]]


def test_a_healthy_gpu_reports_clocks_ecc_pages_and_rows_and_has_no_flag():
    (health,) = health_of(FakeNvml([FakeGpu(clocks=(1095, 1215))]))
    assert health["sm_clock_mhz"] == 1095 and health["sm_clock_max_mhz"] == 1410
    assert health["mem_clock_mhz"] == 1215 and health["mem_clock_max_mhz"] == 1215
    assert health["throttle_reasons"] == ["gpu_idle"]
    assert health["ecc_corrected"] == 0 and health["ecc_uncorrected"] == 0
    assert health["retired_pages_sbe"] == 0 and health["retired_pages_dbe"] == 0
    assert health["retired_pages_pending"] is False
    assert health["remapped_rows_correctable"] == 0 and health["row_remap_failure"] is False
    assert health["xid_count"] == 0 and health["xid_errors"] == []
    assert health["flags"] == []


def test_throttle_reasons_are_decoded_and_thermal_and_hw_slowdown_are_flagged():
    assert decode_throttle_reasons(0x4 | 0x40 | 0x800) == [
        "sw_power_cap",
        "hw_thermal_slowdown",
        "reason_0x800",
    ]
    power_capped, hot, braking = health_of(
        FakeNvml([FakeGpu(throttle=0x4), FakeGpu(throttle=0x20), FakeGpu(throttle=0x80)])
    )
    assert power_capped["throttle_reasons"] == ["sw_power_cap"]
    assert power_capped["flags"] == []  # a power cap is the GPU working as configured
    assert hot["throttle_reasons"] == ["sw_thermal_slowdown"]
    assert hot["flags"] == ["thermal_throttling"]
    assert braking["flags"] == ["hw_slowdown"]


def test_ecc_errors_retired_pages_and_a_failed_row_remap_are_counted_and_flagged():
    (health,) = health_of(
        FakeNvml(
            [
                FakeGpu(
                    ecc=(17, 2),
                    retired=((0x1000, 0x2000, 0x3000), (0x4000,)),
                    retired_pending=1,
                    remapped=(5, 1, 1, 1),
                )
            ]
        )
    )
    assert (health["ecc_corrected"], health["ecc_uncorrected"]) == (17, 2)
    assert (health["retired_pages_sbe"], health["retired_pages_dbe"]) == (3, 1)
    assert health["retired_pages_pending"] is True
    assert health["remapped_rows_correctable"] == 5
    assert health["remapped_rows_uncorrectable"] == 1
    assert health["row_remap_pending"] is True
    assert health["flags"] == ["ecc_uncorrected", "row_remap_failure"]


def test_not_supported_health_readings_are_null_never_zero():
    gpu = FakeGpu(
        clocks=NOT_SUPPORTED,
        max_clocks=NOT_SUPPORTED,
        throttle=NOT_SUPPORTED,
        ecc=NOT_SUPPORTED,
        retired=NOT_SUPPORTED,
        retired_pending=NOT_SUPPORTED,
        remapped=NOT_SUPPORTED,
        events=NOT_SUPPORTED,
    )
    (health,) = health_of(FakeNvml([gpu]))
    for key, value in health.items():
        if key in ("xid_errors", "flags"):
            assert value == []
        else:
            assert value is None, key
    assert health["fan_pct"] is None  # the fake's boards are passively cooled


def test_a_fan_and_other_errors_than_not_supported_are_handled():
    fan, broken = health_of(FakeNvml([FakeGpu(fan=62), FakeGpu(ecc=UNKNOWN)]))
    assert fan["fan_pct"] == 62.0
    assert broken["ecc_corrected"] is None and broken["sm_clock_mhz"] == 1410


def test_xid_errors_since_the_sampler_started_are_counted_kept_and_flagged():
    fake = three_gpus()
    sampler = Sampler(NvmlBackend(nvml=fake), node="n")
    before = health_of(fake, sampler)
    assert [h["xid_count"] for h in before] == [0, 0, 0]
    fake.xid(1, 79)  # "GPU has fallen off the bus"
    fake.xid(1, 13)
    after = health_of(fake, sampler)
    assert after[0]["xid_count"] == 0 and after[0]["flags"] == []
    assert after[1]["xid_count"] == 2
    assert [e["xid"] for e in after[1]["xid_errors"]] == [79, 13]
    assert after[1]["xid_errors"][0]["t"] > 0
    assert "xid" in after[1]["flags"]
    # read once: the next sample counts them still, and does not count them twice
    assert health_of(fake, sampler)[1]["xid_count"] == 2
    # the event set is polled with a 0 ms wait (the fake asserts it), never blocking
    assert fake.calls["nvmlEventSetWait"] >= 3
    sampler.close()
    assert fake.calls["nvmlEventSetFree"] == 1


def test_a_gpu_without_xid_events_has_an_unknown_count():
    fake = FakeNvml([FakeGpu(), FakeGpu(events=NOT_SUPPORTED)])
    fake.xid(1, 48)  # not delivered: that GPU's events are not registered
    supported, unsupported = health_of(fake)
    assert supported["xid_count"] == 0
    assert unsupported["xid_count"] is None and unsupported["flags"] == []


def test_health_is_in_the_latest_sample_and_the_contract_but_not_in_the_history():
    fake = FakeNvml([FakeGpu(throttle=0x40)])
    sample = Sampler(NvmlBackend(nvml=fake), node="n").sample()
    model = Sample.model_validate(sample)
    assert model.gpus[0].health is not None
    assert model.gpus[0].health.flags == ["thermal_throttling"]
    assert '"health"' not in wire_form(sample)


def test_a_lost_gpu_has_no_health_and_the_others_keep_theirs():
    fake = three_gpus()
    sampler = Sampler(NvmlBackend(nvml=fake), node="n")
    sampler.sample()
    fake.gpus[2].lost = True
    healths = health_of(fake, sampler)
    assert healths[2] is None
    assert healths[0]["sm_clock_mhz"] == 1410
