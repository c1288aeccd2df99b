"""tests/real/ros/soak.py's pieces that run without ROS: the chunk log it reads while the node writes it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.real.ros import soak


def test_the_chunk_log_is_read_as_it_grows_and_a_half_written_line_waits(tmp_path: Path) -> None:
    path = tmp_path / "chunks.jsonl"
    log = soak.ChunkLog(path)
    assert log.read() == []  # the node has written nothing yet
    first, second = (json.dumps({"t": t, "instruction": "pick up the cube", "cached": True}) for t in (1.0, 2.5))
    path.write_text(first + "\n" + second[:10])  # the second line is being written
    assert [c["t"] for c in log.read()] == [1.0]
    with open(path, "a") as f:
        f.write(second[10:] + "\n")
    assert [c["t"] for c in log.read()] == [2.5] and [c["t"] for c in log.entries] == [1.0, 2.5]
    assert log.read() == []
