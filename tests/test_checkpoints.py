"""Checkpoints that follow a job run (workloads/checkpoints.py), without processes: what a node
writes comes home once it stopped changing and at the end, each node's files apart; before an
attempt every node gets node 0's files with its own on top; deletions follow; a job run past its
limit is told so; a URI home (fsspec) works like a folder."""

from __future__ import annotations

import os
from pathlib import Path

from jupyter_air.workloads.checkpoints import CheckpointSync, Home, LocalFolder, count_restarts


def nodes(tmp_path: Path, count: int) -> dict[int, LocalFolder]:
    folders = {}
    for n in range(count):
        path = tmp_path / f"host{n}" / "ckpt"
        path.mkdir(parents=True)
        folders[n] = LocalFolder(str(path))
    return folders


def write(folder: LocalFolder, rel: str, data: bytes) -> None:
    path = Path(folder.path) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_a_file_comes_home_once_it_stopped_changing_and_everything_at_the_end(tmp_path):
    home = tmp_path / "home"
    sync = CheckpointSync(Home(str(home)))
    folders = nodes(tmp_path, 2)
    assert sync.restore(1, folders) is None  # nothing saved yet
    write(folders[0], "model.pt", b"epoch 1")
    sync.scan()  # first seen: it may still be being written
    assert not (home / "node_0" / "model.pt").exists()
    sync.scan()  # unchanged since: whole
    assert (home / "node_0" / "model.pt").read_bytes() == b"epoch 1"
    write(folders[0], "model.pt", b"epoch 2, longer")
    write(folders[1], "shard/1.pt", b"node one's own")
    sync.scan()
    assert (home / "node_0" / "model.pt").read_bytes() == b"epoch 1"  # still changing
    saved = sync.finish()  # the commands ended: everything comes home
    assert (home / "node_0" / "model.pt").read_bytes() == b"epoch 2, longer"
    assert (home / "node_1" / "shard" / "1.pt").read_bytes() == b"node one's own"
    assert saved["files"] == 3 and saved["bytes"] == 7 + 15 + 14
    assert Home(str(home)).record()["attempt"] == 1
    assert not [p for p in home.rglob("*.tmp")]  # no partial copy left behind


def test_every_node_of_the_next_attempt_gets_node_0_s_files_and_its_own_on_top(tmp_path):
    home = Home(str(tmp_path / "home"))
    sync = CheckpointSync(home)
    first = nodes(tmp_path / "a", 2)
    sync.restore(1, first)
    sync.run_id = "run-1"
    write(first[0], "snapshot.pt", b"rank 0 state")
    write(first[0], "common.txt", b"node 0")
    write(first[1], "common.txt", b"node 1")
    sync.finish()
    # the retry lands on other machines: empty folders
    second = nodes(tmp_path / "b", 3)
    restored = sync.restore(2, second)
    assert restored is not None
    assert (restored["attempt"], restored["run_id"], restored["files"]) == (1, "run-1", 3)
    for n in range(3):
        assert (Path(second[n].path) / "snapshot.pt").read_bytes() == b"rank 0 state"
    assert (Path(second[1].path) / "common.txt").read_bytes() == b"node 1"  # its own wins
    assert (Path(second[2].path) / "common.txt").read_bytes() == b"node 0"
    # what was put back is not brought home again, and is not node 1's to keep
    sync.scan()
    sync.finish()
    assert sorted(os.listdir(tmp_path / "home" / "node_1")) == ["common.txt"]
    assert sync.total_bytes() == len(b"rank 0 state") + 6 + 6


def test_a_file_removed_on_its_node_is_removed_at_home(tmp_path):
    home = tmp_path / "home"
    sync = CheckpointSync(Home(str(home)))
    folders = nodes(tmp_path, 1)
    sync.restore(1, folders)
    write(folders[0], "epoch-1.pt", b"1")
    write(folders[0], "epoch-2.pt", b"2")
    sync.scan()
    sync.scan()
    assert sorted(os.listdir(home / "node_0")) == ["epoch-1.pt", "epoch-2.pt"]
    os.unlink(Path(folders[0].path) / "epoch-1.pt")  # the script keeps the latest only
    sync.scan()
    assert sorted(os.listdir(home / "node_0")) == ["epoch-2.pt"]


def test_past_the_limit_nothing_more_is_kept_and_the_reason_says_so(tmp_path):
    sync = CheckpointSync(Home(str(tmp_path / "home")), limit_bytes=100)
    folders = nodes(tmp_path, 1)
    sync.restore(1, folders)
    write(folders[0], "small.pt", b"x" * 60)
    write(folders[0], "big.pt", b"y" * 60)
    sync.finish()
    assert sync.over is not None
    assert "JUPYTER_AIR_CHECKPOINT_MAX_GB" in sync.over and "node 0: small.pt" in sync.over
    assert sync.total_bytes() == 60  # the first file fits, the second does not


def test_a_home_given_as_a_uri_keeps_the_same_files(tmp_path):
    location = f"memory://{tmp_path.name}/ckpt"
    sync = CheckpointSync(Home(location))
    first = nodes(tmp_path / "a", 1)
    sync.restore(1, first)
    write(first[0], "sub/model.pt", b"weights")
    sync.finish()
    assert Home(location).files(0) == {"sub/model.pt": 7}
    second = nodes(tmp_path / "b", 2)
    restored = CheckpointSync(Home(location)).restore(2, second)
    assert restored is not None and restored["attempt"] == 1
    assert (Path(second[1].path) / "sub" / "model.pt").read_bytes() == b"weights"


def test_torch_elastic_restarts_are_counted_from_the_node_logs(tmp_path):
    def failed(second: int, rank: int) -> bytes:
        return (
            f"ERROR 2026-12-04T08:37:{second:02d}.504Z err E1204 08:37:{second:02d}.503000 521 "
            "torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 5) "
            f"local_rank: {rank} (pid: 575) of binary: python\n"
        ).encode()

    # node 0: two ranks failed together at :10 (one round), then again at :20
    (tmp_path / "node_0.log").write_bytes(
        b"INFO x out hello\n" + failed(10, 0) + failed(10, 1) + failed(20, 0)
    )
    (tmp_path / "node_1.log").write_bytes(failed(10, 0))
    logs = {0: tmp_path / "node_0.log", 1: tmp_path / "node_1.log", 2: tmp_path / "gone.log"}
    assert count_restarts(logs, most=5, ended_failed=False) == 2
    assert count_restarts(logs, most=5, ended_failed=True) == 1  # the last round ended it
    assert count_restarts(logs, most=1, ended_failed=False) == 1
