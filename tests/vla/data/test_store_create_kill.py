"""SIGKILL inside `EpisodeStore.create` (fresh and overwrite) and create(overwrite=True) racing a
writer: the path is always openable or replaceable, and a writer's
committed episodes are never lost or corrupted."""

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.vla.data.test_store_kill import WRITER, assert_committed_intact
from vla.data.store import EpisodeStore
from vla.data.synthetic import default_schema, synthetic_episode

CHILD = Path(__file__).with_name("create_writer.py")
SCHEMA = default_schema(image_size=16)
KILLS = 24


def create_seconds(tmp: Path) -> float:
    """This machine's time for one create (the child runs the same code)."""
    times = []
    for i in range(3):
        t = time.perf_counter()
        EpisodeStore.create(tmp / f"calib{i}.zarr", SCHEMA, image_chunk=8, lowdim_chunk=64).close()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def openable_or_replaceable(path: Path) -> str:
    """What create-or-append callers do: append when a store is there, else create one."""
    if (path / "zarr.json").exists():
        with EpisodeStore.open(path, mode="a") as s:  # must not raise
            s.table()
            return "store"
    EpisodeStore.create(path, SCHEMA, image_chunk=8, lowdim_chunk=64).close()  # must not raise
    return "replaced"


def kill_create(path: Path, overwrite: bool, delay: float) -> None:
    proc = subprocess.Popen([sys.executable, str(CHILD), "create", str(path), *(["overwrite"] * overwrite)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().startswith("READY")
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.mark.slow
def test_sigkill_inside_create_leaves_an_openable_or_replaceable_path(tmp_path: Path) -> None:
    rng = random.Random(18)
    seconds = create_seconds(tmp_path)
    path = tmp_path / "store.zarr"
    outcomes: dict[str, int] = {}
    mid_create = 0
    for k in range(KILLS):
        overwrite = k % 2 == 1
        kept = 0
        if overwrite:  # replace a store that holds episodes: it must survive intact or be replaced whole
            with EpisodeStore.create(path, SCHEMA, overwrite=True, image_chunk=8, lowdim_chunk=64) as s:
                for seed in range(3):
                    s.append_episode(synthetic_episode(SCHEMA, seed))
            kept = 3
        else:
            shutil.rmtree(path, ignore_errors=True)
        kill_create(path, overwrite, rng.uniform(0.0, 1.5 * seconds))
        mid_create += any(tmp_path.glob(".store.zarr.*"))  # the kill landed inside a create
        outcome = openable_or_replaceable(path)
        n = EpisodeStore.open(path).n_episodes
        assert n in (0, kept), f"kill {k}: {n} episodes"
        if n:
            assert_committed_intact(EpisodeStore.open(path), {})
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if outcome == "replaced":
            assert not any(tmp_path.glob(".store.zarr.*")), "create removes the build folders of killed creators"
    assert mid_create >= 3, f"only {mid_create} of {KILLS} kills landed inside create ({outcomes})"
    print(f"{KILLS} kills, {mid_create} inside create, outcomes {outcomes}")


@pytest.mark.slow
def test_overwrite_never_replaces_a_store_while_a_writer_holds_it(tmp_path: Path) -> None:
    path = tmp_path / "store.zarr"
    EpisodeStore.create(path, default_schema(image_size=32), image_chunk=8, lowdim_chunk=64).close()
    writer = subprocess.Popen([sys.executable, str(WRITER), str(path)], stdout=subprocess.PIPE, text=True)
    racer = None
    try:
        assert writer.stdout is not None and writer.stdout.readline().startswith("READY")
        racer = subprocess.run([sys.executable, str(CHILD), "race", str(path), "4"], capture_output=True,
                               text=True, timeout=120)
        assert racer.returncode == 0, racer.stderr[-2000:]
        _, done, refused = racer.stdout.split()
        assert int(done) == 0 and int(refused) > 10, racer.stdout  # every overwrite refused
    finally:
        writer.kill()
        writer.wait()
    store = EpisodeStore.open(path)
    assert store.n_episodes > 0
    assert_committed_intact(store, {})


@pytest.mark.slow
def test_overwrite_racing_open_append_close_writers_keeps_stores_consistent(tmp_path: Path) -> None:
    path = tmp_path / "store.zarr"
    EpisodeStore.create(path, SCHEMA, image_chunk=8, lowdim_chunk=64).close()
    procs = [subprocess.Popen([sys.executable, str(CHILD), mode, str(path), "5"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for mode in ("append", "race")]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0 and out.startswith("DONE"), err[-2000:]
    appended, replaced = int(outs[0][0].split()[1]), int(outs[1][0].split()[1])
    assert appended > 0 and replaced > 0, outs  # both sides won some rounds
    # Whatever interleaving happened, the store is consistent and every episode is the writer's.
    store = EpisodeStore.open(path)
    assert_committed_intact(store, {})
    assert not any(tmp_path.glob(".store.zarr.*")) or EpisodeStore.exists(path)
