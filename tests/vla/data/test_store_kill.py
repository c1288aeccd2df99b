"""SIGKILL a real writer process at random moments; committed episodes must survive value for value."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from vla.data.store import EpisodeStore
from vla.data.synthetic import default_schema, synthetic_episode

WRITER = Path(__file__).with_name("kill_writer.py")
KILLS_PER_GROUP = 50
GROUPS = 4  # 200 kill points in all; groups run in parallel under pytest-xdist
# Step data of every episode re-read after every 10th kill and at the end; after the others, that of
# the episodes a killed append could have touched (re-reading all after each kill was 2/3 of the
# test's 15 CPU-minutes). Metadata of every episode is checked after every kill.
FULL_CHECK_EVERY = 10
CHUNK = 64  # the lowdim chunk; images are chunked by 8, within it


def assert_committed_intact(store: EpisodeStore, expected_cache: dict[int, dict], steps_from: int = 0) -> None:
    """Every committed episode's metadata, and the step data of episodes `steps_from` onwards."""
    table = store.table()
    assert len(table) == store.n_episodes
    assert (table.episode_ends[-1] if len(table) else 0) == store.n_steps
    for i in range(store.n_episodes):
        if i not in expected_cache:
            ref = synthetic_episode(store.schema, seed=i)
            expected_cache[i] = {"steps": {k: v.astype(store.schema.step_dtype(k)) for k, v in ref.steps.items()},
                                 "meta": (ref.task, ref.instruction, ref.success, ref.source, ref.seed)}
        exp = expected_cache[i]
        meta = (table.task[i], table.instruction[i], bool(table.success[i]), table.source[i], int(table.seed[i]))
        assert meta == exp["meta"], f"episode {i} meta"
        if i < steps_from:
            continue
        got = store.episode(i)
        assert (got.task, got.instruction, got.success, got.source, got.seed) == exp["meta"], f"episode {i} meta"
        for key, value in exp["steps"].items():
            np.testing.assert_array_equal(got.steps[key], value, err_msg=f"episode {i} key {key}")


def tail_start(store: EpisodeStore, n_steps_before: int, chunk: int) -> int:
    """The first episode that shares a chunk of `chunk` steps with what was written after
    `n_steps_before`: the only step data a killed append can reach, unless it writes out of bounds
    (which the full check every FULL_CHECK_EVERY kills catches, since damage stays)."""
    ends = store.table().episode_ends
    return int(np.searchsorted(ends, (n_steps_before // chunk) * chunk, side="right"))


@pytest.mark.slow
@pytest.mark.parametrize("group", range(GROUPS))
def test_sigkill_never_damages_committed_episodes(tmp_path: Path, group: int) -> None:
    schema = default_schema(image_size=32)
    path = tmp_path / "store.zarr"
    EpisodeStore.create(path, schema, image_chunk=8, lowdim_chunk=CHUNK).close()
    rng = random.Random(1234 + group)
    expected: dict[int, dict] = {}
    committed_before = 0
    grew = 0
    steps_before = 0
    for kill in range(KILLS_PER_GROUP):
        proc = subprocess.Popen([sys.executable, str(WRITER), str(path)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("READY"), f"writer did not start: {line!r}"
        # Kill at a random point of a write, on this machine's own clock: let 1-2 episodes commit,
        # then kill a random fraction of one write's duration into the next (a fixed sleep lands
        # before the first commit on a loaded machine and tests nothing).
        t = time.perf_counter()
        for _ in range(rng.randint(1, 2)):
            line = proc.stdout.readline()
            assert line.startswith("COMMITTED"), f"writer stopped: {line!r}"
            write_s, t = time.perf_counter() - t, time.perf_counter()
        time.sleep(rng.uniform(0.0, write_s))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        # A reader opened over the wreckage sees exactly the committed prefix.
        reader = EpisodeStore.open(path)
        assert reader.n_episodes >= committed_before
        full = kill % FULL_CHECK_EVERY == FULL_CHECK_EVERY - 1 or kill == KILLS_PER_GROUP - 1
        first = 0 if full else tail_start(reader, steps_before, CHUNK)
        assert_committed_intact(reader, expected, first)
        # Reopening for writing discards the partial tail and keeps every committed episode.
        with EpisodeStore.open(path, mode="a") as writer:
            assert writer.n_episodes == reader.n_episodes
            assert_committed_intact(writer, expected, first)
            for key in writer.step_keys:
                assert writer._array(f"data/{key}", fresh=True).shape[0] == writer.n_steps
        assert not list(path.rglob("*.partial"))
        grew += reader.n_episodes > committed_before
        committed_before, steps_before = reader.n_episodes, reader.n_steps
    # The kills must have landed while episodes were being written, not only at start-up.
    assert committed_before > 10 and grew > KILLS_PER_GROUP // 3
