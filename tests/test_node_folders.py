"""A node's folder as its Ray actor serves it (backends/node_folders.py): a file read and
written in chunks comes out whole and the same, a copy under way is invisible to a scan and
replaces the file only when whole, and no name reaches out of the folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_air.backends import node_folders
from jupyter_air.files import scan_folder


def test_a_file_travels_in_chunks_and_appears_only_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(node_folders, "CHUNK", 1000)
    source, node = tmp_path / "home", tmp_path / "node"
    source.mkdir()
    node.mkdir()
    data = bytes(range(256)) * 10  # 2,560 bytes: two whole chunks and a part
    (source / "snapshot.pt").write_bytes(data)
    (node / "sub").mkdir()
    (node / "sub" / "snapshot.pt").write_bytes(b"the old one")

    offset = 0
    with open(source / "snapshot.pt", "rb") as file:
        while True:
            chunk = file.read(node_folders.CHUNK)
            last = len(chunk) < node_folders.CHUNK
            state = node_folders.write_chunk(str(node), "sub/snapshot.pt", offset, chunk, last)
            offset += len(chunk)
            if not last:  # under way: the old file is still what a reader and a scan see
                assert (node / "sub" / "snapshot.pt").read_bytes() == b"the old one"
                assert scan_folder(node) == {
                    "sub/snapshot.pt": (11, scan_folder(node)["sub/snapshot.pt"][1])
                }
            else:
                break
    assert (node / "sub" / "snapshot.pt").read_bytes() == data
    assert state[0] == len(data) and scan_folder(node)["sub/snapshot.pt"] == state
    assert not [p for p in node.rglob("*") if p.name.endswith(".tmp")]

    back, offset = b"", 0
    while True:
        chunk = node_folders.read_chunk(str(node), "sub/snapshot.pt", offset)
        back += chunk
        offset += len(chunk)
        if len(chunk) < node_folders.CHUNK:
            break
    assert back == data


@pytest.mark.parametrize("name", ["../outside.txt", "/etc/passwd", "sub/../../x", ""])
def test_no_name_reaches_out_of_the_folder(tmp_path: Path, name: str):
    with pytest.raises(ValueError, match="is not a file of"):
        node_folders.inside(str(tmp_path), name)
    with pytest.raises(ValueError):
        node_folders.write_chunk(str(tmp_path), name, 0, b"x", True)
