"""Which GPUs a node's monitor records: the ones CUDA_VISIBLE_DEVICES names (mlflow #13398)."""

from __future__ import annotations

from jupyter_air.tracking.system_metrics import select_gpus, why_no_nvml


def test_all_gpus_without_cuda_visible_devices():
    assert select_gpus(["h0", "h1"], None) is None


def test_indices_in_cuda_order():
    assert select_gpus(["h0", "h1", "h2", "h3"], "2,0") == ["h2", "h0"]


def test_cuda_stops_at_the_first_invalid_entry():
    assert select_gpus(["h0", "h1"], "1,7,0") == ["h1"]


def test_empty_hides_all_gpus():
    assert select_gpus(["h0", "h1"], "") == []


def test_mig_instances_keep_every_gpu():
    assert select_gpus(["h0"], "MIG-4f6c5b2a-0000-0000-0000-000000000000") is None


def test_why_no_gpu_metrics_is_said_in_words():
    reason = why_no_nvml()
    assert isinstance(reason, str) and reason
