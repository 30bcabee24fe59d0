"""The rig of hosts that share nothing (tests/netns_rig.py): a real Ray cluster whose workers
have their own addresses and host names and do not see the Jupyter host's folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from netns_rig import SUBNET, Rig

# the rig starts within the first test: its timeout covers that too
pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]

ON_EACH_WORKER = """
import json, os, socket, sys, ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
ray.init(address="auto", log_to_driver=False, logging_level="ERROR")
secret = sys.argv[1]

@ray.remote(num_cpus=1)
def look(path):
    return {"host": socket.gethostname(), "ip": ray.util.get_node_ip_address(),
            "sees": os.path.exists(path)}

workers = [n for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU")]
refs = [look.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))
        .remote(secret) for n in workers]
for answer in ray.get(refs, timeout=120):
    print(json.dumps(answer))
"""


def test_hosts_share_nothing_but_the_network(netns_rig: Rig, tmp_path: Path) -> None:
    nodes = netns_rig.nodes()
    assert sorted(n["ip"] for n in nodes) == [f"{SUBNET}.{k}" for k in (1, 2, 3)]
    secret = tmp_path / "only-on-the-jupyter-host.txt"
    secret.write_text("the Jupyter host's work folder\n")

    done = netns_rig.python(netns_rig.head, ON_EACH_WORKER, str(secret))
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert sorted(a["host"] for a in answers) == ["air-w1", "air-w2"], done.stdout + done.stderr
    assert sorted(a["ip"] for a in answers) == [f"{SUBNET}.2", f"{SUBNET}.3"]
    assert not any(a["sees"] for a in answers), answers  # the Jupyter host's folder is its own
