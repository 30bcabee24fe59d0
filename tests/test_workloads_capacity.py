"""The GPU check at submission: counted through NVML (faked here, gpustat-style), limited by
CUDA_VISIBLE_DEVICES, matched by model name; not enough → refused at once with what exists;
CPU workloads need no GPU; each node gets its own GPUs."""

from __future__ import annotations

import pynvml
import pytest
from fake_nvml import FakeGpu, FakeNvml

from jupyter_air.backends.base import CapacityError
from jupyter_air.workloads.capacity import (
    GpuInventory,
    assign_gpus,
    cuda_visible_devices,
    gpu_inventory,
)
from jupyter_air.workloads.spec import Compute


def two_a100() -> FakeNvml:
    return FakeNvml(
        [
            FakeGpu(name="NVIDIA A100-SXM4-40GB", uuid="GPU-aaaa0000-0000-0000-0000-000000000000"),
            FakeGpu(name="NVIDIA A100-SXM4-40GB", uuid="GPU-bbbb0000-0000-0000-0000-000000000001"),
        ]
    )


def test_inventory_from_nvml():
    nvml = two_a100()
    inventory = gpu_inventory(nvml, environ={})
    assert [(g.index, g.name) for g in inventory.gpus] == [
        (0, "NVIDIA A100-SXM4-40GB"),
        (1, "NVIDIA A100-SXM4-40GB"),
    ]
    assert inventory.describe() == "2 GPUs: 2 x NVIDIA A100-SXM4-40GB"
    assert not nvml.initialized  # shut down again


def test_cuda_visible_devices_limits_the_inventory():
    only_1 = gpu_inventory(two_a100(), environ={"CUDA_VISIBLE_DEVICES": "1"})
    assert [g.index for g in only_1.gpus] == [1]
    by_uuid = gpu_inventory(two_a100(), environ={"CUDA_VISIBLE_DEVICES": "GPU-bbbb"})
    assert [g.index for g in by_uuid.gpus] == [1]
    none = gpu_inventory(two_a100(), environ={"CUDA_VISIBLE_DEVICES": ""})
    assert none.gpus == [] and "CUDA_VISIBLE_DEVICES" in none.describe()
    # CUDA stops at the first invalid entry
    assert [g.index for g in gpu_inventory(two_a100(), {"CUDA_VISIBLE_DEVICES": "0,7,1"}).gpus] == [
        0
    ]


def test_no_nvml_means_no_gpu_with_the_reason():
    inventory = gpu_inventory(FakeNvml([], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND), {})
    assert inventory.gpus == []
    assert inventory.describe().startswith("no GPU (NVML is unavailable")


def test_assignment_and_refusals():
    inventory = gpu_inventory(two_a100(), environ={})
    per_node = assign_gpus(Compute(num_accelerators=1, num_nodes=2), inventory)
    assert [cuda_visible_devices(node) for node in per_node] == ["0", "1"]
    both = assign_gpus(Compute(num_accelerators=2, accelerator_type="A100"), inventory)
    assert cuda_visible_devices(both[0]) == "0,1"
    assert assign_gpus(
        Compute(num_accelerators=8, accelerator_type="CPU", num_nodes=2), inventory
    ) == [
        [],
        [],
    ]
    with pytest.raises(CapacityError) as info:
        assign_gpus(Compute(num_accelerators=2, accelerator_type="H100"), inventory)
    assert str(info.value).startswith(
        "Not enough GPUs: this workload needs 2 H100 GPUs; this machine has 2 GPUs: "
        "2 x NVIDIA A100-SXM4-40GB, none of them H100."
    )
    with pytest.raises(CapacityError, match=r"needs 4 GPUs \(2 per node x 2 nodes\)"):
        assign_gpus(Compute(num_accelerators=2, num_nodes=2), inventory)
    with pytest.raises(CapacityError, match="this machine has no GPU"):
        assign_gpus(Compute(), GpuInventory([], "NVML is unavailable"))
