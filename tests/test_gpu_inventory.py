"""One GPU inventory: what NVML lists (index, UUID, name, MIG instances) and what
CUDA_VISIBLE_DEVICES names, the same for `.distributed()`, the workload check and the panel; and
the backend contract in its own module (no import circle)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from fake_nvml import FakeGpu, FakeMig, FakeNvml, MiB, three_gpus

import jupyter_air.telemetry
from jupyter_air.backends.base import CapacityError
from jupyter_air.launch.devices import plan_devices, visible_gpus
from jupyter_air.telemetry import Sampler
from jupyter_air.telemetry.inventory import read_inventory
from jupyter_air.telemetry.nvml import NvmlBackend
from jupyter_air.workloads.capacity import assign_gpus, gpu_inventory
from jupyter_air.workloads.spec import Compute

MIG_A = "MIG-5b1e0000-0000-0000-0000-00000000000a"
MIG_B = "MIG-5b1e0000-0000-0000-0000-00000000000b"


def mig_node() -> FakeNvml:
    """GPU 0 whole; GPU 1 split into two MIG instances."""
    return FakeNvml(
        [
            FakeGpu(uuid="GPU-aaaa0000-0000-0000-0000-000000000000", mig=[]),
            FakeGpu(
                uuid="GPU-bbbb0000-0000-0000-0000-000000000001",
                mig=[
                    FakeMig(MIG_A, name="NVIDIA A100-SXM4-40GB MIG 3g.20gb", mem=(0, 19_968 * MiB)),
                    FakeMig(MIG_B),
                ],
            ),
        ]
    )


def test_the_inventory_lists_gpus_with_their_mig_instances_and_shuts_nvml_down():
    fake = mig_node()
    inventory = read_inventory(fake)
    assert [(g.index, g.uuid) for g in inventory.gpus] == [
        (0, "GPU-aaaa0000-0000-0000-0000-000000000000"),
        (1, "GPU-bbbb0000-0000-0000-0000-000000000001"),
    ]
    assert inventory.gpus[0].mig == ()
    migs = inventory.gpus[1].mig
    assert [(m.index, m.uuid, m.name, m.mem_total_mb) for m in migs] == [
        (0, MIG_A, "NVIDIA A100-SXM4-40GB MIG 3g.20gb", 19_968.0),
        (1, MIG_B, "NVIDIA A100-SXM4-40GB MIG 1g.5gb", 4_864.0),
    ]
    assert not fake.initialized


@pytest.mark.parametrize(
    ("setting", "ids"),
    [
        (None, ["0", "1"]),
        ("1,0", ["1", "0"]),
        ("GPU-bbbb", ["GPU-bbbb"]),
        (f"{MIG_B},0", [MIG_B, "0"]),
        ("MIG-5b1e0000-0000-0000-0000-00000000000a", [MIG_A]),
        ("0,MIG-nope,1", ["0"]),  # CUDA stops at the first entry naming nothing
        ("GPU-", []),  # a prefix of both GPUs is ambiguous: nothing
        ("0,0", ["0"]),  # a device named twice ends the list
        ("-1", []),
    ],
)
def test_cuda_visible_devices_names_the_same_devices_everywhere(setting, ids):
    env = {} if setting is None else {"CUDA_VISIBLE_DEVICES": setting}
    devices, _ = read_inventory(mig_node()).visible(setting)
    assert [d.id for d in devices] == ids
    # .distributed() hands the ranks exactly these
    assert [g.id for g in visible_gpus(mig_node(), env).gpus] == ids
    # and the workload check counts exactly these (it used to count every GPU for MIG entries)
    workload = gpu_inventory(mig_node(), env).gpus
    assert [(g.index, g.mig) for g in workload] == [
        (d.gpu.index, d.mig.uuid if d.mig else None) for d in devices
    ]


def test_a_mig_instance_is_named_as_such():
    env = {"CUDA_VISIBLE_DEVICES": MIG_A}
    (gpu,) = visible_gpus(mig_node(), env).gpus
    assert gpu.name == "NVIDIA A100-SXM4-40GB MIG 3g.20gb"
    plan = plan_devices(None, nvml=mig_node(), environ=env)
    assert (plan.kind, plan.cuda_visible_devices) == ("gpu", MIG_A)


def test_a_workload_is_not_given_mig_instances_by_gpu_index():
    inventory = gpu_inventory(mig_node(), {"CUDA_VISIBLE_DEVICES": f"{MIG_A},{MIG_B}"})
    assert inventory.describe().startswith("2 GPUs")
    with pytest.raises(CapacityError, match="MIG instances") as refused:
        assign_gpus(Compute(num_accelerators=1), inventory)
    assert MIG_A in str(refused.value)
    # whole GPUs still work, and CPU workloads need none
    whole = gpu_inventory(mig_node(), {"CUDA_VISIBLE_DEVICES": "0"})
    assert [[g.index for g in node] for node in assign_gpus(Compute(), whole)] == [[0]]


def test_the_panel_shows_mig_instances_under_their_gpu():
    fake = mig_node()
    fake.gpus[1].mig[0].mem = (7_000 * MiB, 19_968 * MiB)
    sampler = Sampler(NvmlBackend(nvml=fake), node="n")
    sample = sampler.sample()
    devices = sampler.info()["devices"]
    assert devices[0]["mig"] == []
    assert [m["uuid"] for m in devices[1]["mig"]] == [MIG_A, MIG_B]
    assert sample["gpus"][0]["mig"] == []
    first, second = sample["gpus"][1]["mig"]
    assert first == {"index": 0, "uuid": MIG_A, "mem_used_mb": 7_000.0, "mem_total_mb": 19_968.0}
    assert second["uuid"] == MIG_B
    # a GPU without MIG support reports no instances, and that is not an error
    assert Sampler(NvmlBackend(nvml=three_gpus()), node="n").sample()["gpus"][0]["mig"] == []


def telemetry_imports() -> dict[str, set[str]]:
    """Which telemetry modules each telemetry module imports, anywhere in it (functions too)."""
    folder = Path(jupyter_air.telemetry.__file__).parent
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    found.add(node.module.split(".")[0])
                else:
                    found.update(alias.name for alias in node.names)
        graph[path.stem] = found - {"__init__"}
    return graph


def test_the_backend_contract_is_its_own_module_and_no_module_imports_in_a_circle():
    graph = telemetry_imports()
    assert "contract" in graph["nvml"] and "backends" not in graph["nvml"]
    assert "contract" in graph["backends"]

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    circles = sorted(m for m in graph if m != "__init__" and reaches(m, m, set()))
    assert circles == []
