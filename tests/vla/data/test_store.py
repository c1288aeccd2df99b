"""EpisodeStore: append/read round trip, bad input leaves the store unchanged, filters, readers."""

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from vla.data.schema import Episode, EpisodeValidationError
from vla.data.store import EpisodeStore, StoreError
from vla.data.synthetic import default_schema, synthetic_episode

SCHEMA = default_schema(image_size=16)


@pytest.fixture
def store(tmp_path: Path) -> EpisodeStore:
    s = EpisodeStore.create(tmp_path / "s.zarr", SCHEMA, image_chunk=4, lowdim_chunk=32)
    for seed in range(6):
        s.append_episode(synthetic_episode(SCHEMA, seed))
    return s


def snapshot(store: EpisodeStore) -> tuple:
    reopened = EpisodeStore.open(store.path)
    return reopened.n_episodes, reopened.n_steps, reopened.read("action", 0, reopened.n_steps).tobytes()


def test_round_trip_value_for_value(store: EpisodeStore) -> None:
    reader = EpisodeStore.open(store.path)
    assert reader.n_episodes == 6
    for seed in range(6):
        ref, got = synthetic_episode(SCHEMA, seed), reader.episode(seed)
        assert (got.task, got.instruction, got.success, got.source, got.seed) == (
            ref.task, ref.instruction, ref.success, ref.source, ref.seed)
        for key, value in ref.steps.items():
            np.testing.assert_array_equal(got.steps[key], value.astype(SCHEMA.step_dtype(key)), err_msg=key)


def _bad(mutate) -> Episode:
    ep = synthetic_episode(SCHEMA, 100, length=10)
    mutate(ep)
    return ep


@pytest.mark.parametrize(("mutate", "needles"), [
    (lambda e: e.steps.pop("state"), ["episode 6", "'state'", "missing"]),
    (lambda e: e.steps.__setitem__("action", e.steps["action"][:, :3]), ["'action'", "shape", "(10, 7)"]),
    (lambda e: e.steps.__setitem__("images/agentview", e.steps["images/agentview"].astype(np.float32)),
     ["'images/agentview'", "uint8"]),
    (lambda e: e.steps["action"].__setitem__((4, 2), np.nan), ["'action'", "step 4", "nan"]),
    (lambda e: e.steps["state"].__setitem__((7, 0), np.inf), ["'state'", "step 7", "inf"]),
    (lambda e: setattr(e, "source", "demos"), ["'source'", "did you mean 'demo'"]),
    (lambda e: e.steps.__setitem__("actoin", e.steps["action"]), ["'actoin'", "did you mean 'action'"]),
    (lambda e: setattr(e, "instruction", "  "), ["'instruction'"]),
    (lambda e: e.steps.__setitem__("is_intervention", np.zeros(10, np.float32)), ["'is_intervention'", "bool"]),
])
def test_bad_input_is_rejected_and_store_unchanged(store: EpisodeStore, mutate, needles) -> None:
    before = snapshot(store)
    with pytest.raises(EpisodeValidationError) as err:
        store.append_episode(_bad(mutate))
    for needle in needles:
        assert needle in str(err.value), (needle, str(err.value))
    assert snapshot(store) == before
    # The store still accepts good episodes afterwards.
    assert store.append_episode(synthetic_episode(SCHEMA, 6)) == 6


def test_filters(store: EpisodeStore) -> None:
    table = store.table()
    assert list(store.select(task="reach")) == [i for i in range(6) if table.task[i] == "reach"]
    wanted = ("demo", "rollout")
    assert list(store.select(source=list(wanted))) == [i for i in range(6) if table.source[i] in wanted]
    assert set(table.source[:2]) == {"demo", "rollout"}  # the synthetic episodes cycle through the sources
    assert list(store.select(success=False)) == [0, 5]
    assert list(store.select(intervention=True)) == [0, 3]
    assert list(store.select(task="reach", intervention=True)) == [3]
    with pytest.raises(ValueError, match="did you mean 'guided'"):
        store.select(source="guide")


def test_single_writer_and_bad_paths(store: EpisodeStore, tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="another process is writing"):
        EpisodeStore.open(store.path, mode="a")
    with pytest.raises(StoreError, match="no episode store"):
        EpisodeStore.open(tmp_path / "nothing.zarr")
    with pytest.raises(StoreError, match="already exists"):
        EpisodeStore.create(store.path, SCHEMA)
    with pytest.raises(StoreError, match="read-only"):
        EpisodeStore.open(store.path).append_episode(synthetic_episode(SCHEMA, 1))
    with pytest.raises(KeyError, match="did you mean 'action'"):
        store.read("acton", 0, 1)


READER = """
import sys, time
from vla.data.store import EpisodeStore
store = EpisodeStore.open(sys.argv[1])
seen, deadline = [], time.time() + 300
while time.time() < deadline:
    time.sleep(0.01)  # poll, do not spin: the writer needs the CPU on a loaded 2-core machine
    n = store.refresh()
    if n:
        ends = store.table().episode_ends
        assert ends[-1] == store.n_steps, (ends[-1], store.n_steps)
        last = store.episode(n - 1)
        assert len(last) == ends[-1] - (ends[-2] if n > 1 else 0)
    if not seen or seen[-1] != n:
        seen.append(n)
    if n >= int(sys.argv[2]):
        break
print(",".join(map(str, seen)))
"""


@pytest.mark.slow
def test_one_writer_several_reader_processes(tmp_path: Path) -> None:
    path = tmp_path / "s.zarr"
    writer = EpisodeStore.create(path, SCHEMA, image_chunk=4, lowdim_chunk=32)
    target = 25
    readers = [subprocess.Popen([sys.executable, "-c", READER, str(path), str(target)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(3)]
    time.sleep(1.0)
    for seed in range(target):
        writer.append_episode(synthetic_episode(SCHEMA, seed))
        time.sleep(0.02)
    for proc in readers:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        counts = [int(c) for c in out.strip().split(",")]
        assert counts == sorted(counts) and counts[-1] == target
