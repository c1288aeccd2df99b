"""The deployment recorder on a real EpisodeStore: one control timeline, the policy's chunks beside the
store, and a writer that is stuck, dead or out of disk never holding up the control side."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from real.recorder import EpisodeRecorder, RecorderConfig, load_sidecar, resample
from tests.real.ros.helpers import wait_for
from vla.data.schema import StoreSchema
from vla.data.store import EpisodeStore

SCHEMA = StoreSchema(cameras={"front": (8, 8)}, state_dim=2, action_dim=2, fps=20.0)
DT = 0.05


def image(i: int) -> np.ndarray:
    return np.full((8, 8, 3), i % 256, np.uint8)


def run_episode(rec: EpisodeRecorder, t0: float, n: int, success: bool, instruction: str = "pick") -> None:
    """Joint states at 100 Hz on q(t) = (t, 2t), a control tick every 50 ms, a chunk every 4 ticks."""
    for k in range(n):
        t = t0 + k * DT
        for j in range(5):
            tq = t + j * 0.01 - 0.017  # they straddle the tick: the state is interpolated, not held
            rec.joint_state(tq, np.array([tq, 2 * tq]))
        if k % 4 == 0:
            rec.chunk(k, k // 4, np.full((6, 2), k, np.float32))
        rec.tick(t, np.array([k, -k], np.float64), np.array([k, -k], np.float32) + 0.5, k // 4,
                 "starved" if k == 3 else None, {"front": image(k)}, instruction)
    rec.end_episode(success)


def test_resample_interpolates_and_holds_the_ends() -> None:
    times = np.array([0.0, 1.0, 2.0])
    values = np.array([[0.0, 10.0], [1.0, 20.0], [4.0, 0.0]])
    out = resample(times, values, np.array([-1.0, 0.5, 1.5, 3.0]))
    np.testing.assert_allclose(out, [[0, 10], [0.5, 15], [2.5, 10], [4, 0]])


def test_episodes_on_one_control_timeline_with_their_chunks(tmp_path: Path) -> None:
    store = tmp_path / "deploy.zarr"
    rec = EpisodeRecorder(RecorderConfig(store=str(store), task="real_pick", policy_version=3), SCHEMA)
    run_episode(rec, 100.0, 20, True)
    run_episode(rec, 200.0, 12, False, instruction="")
    rec.close()
    assert rec.counters()["recorder_stored"] == 2 and rec.dropped == 0 and rec.failed == 0

    with EpisodeStore.open(store) as s:
        table = s.table()
        assert list(table.success) == [True, False] and list(table.source) == ["rollout", "rollout"]
        assert list(table.instruction) == ["pick", "real_pick"]  # no instruction heard: the task's name
        ep = s.episode(0)
        assert len(ep) == 20
        np.testing.assert_allclose(ep.steps["timestamp"], np.arange(20) * DT, atol=1e-9)
        t = 100.0 + np.arange(20) * DT
        np.testing.assert_allclose(ep.steps["state"], np.stack([t, 2 * t], 1), rtol=1e-6)  # resampled at the ticks
        np.testing.assert_array_equal(ep.steps["action"][:, 0], np.arange(20))  # the commands sent
        np.testing.assert_array_equal(ep.steps["images/front"][7], image(7))
        assert set(ep.steps["policy_version"]) == {3} and not ep.steps["is_intervention"].any()

    side = load_sidecar(store, 0)
    assert side["chunks"].shape == (5, 6, 2) and list(side["chunk_tick"]) == [0, 4, 8, 12, 16]
    np.testing.assert_array_equal(side["step_chunk_id"], np.arange(20) // 4)
    np.testing.assert_allclose(side["step_raw_action"][:, 0], np.arange(20) + 0.5)
    assert side["step_hold"][3] == "starved" and side["step_hold"][4] == ""
    assert load_sidecar(store, 1)["chunks"].shape == (3, 6, 2)  # the second episode's chunks only


def test_an_existing_store_of_another_schema_stops_it_at_once(tmp_path: Path) -> None:
    other = StoreSchema(cameras={"front": (16, 16)}, state_dim=2, action_dim=2)
    EpisodeStore.create(tmp_path / "s.zarr", other).close()
    with pytest.raises(ValueError, match=r"s\.zarr: the store holds cameras .*16, 16.*the deploy config gives"):
        EpisodeRecorder(RecorderConfig(store=str(tmp_path / "s.zarr")), SCHEMA)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="queue_size"):
        RecorderConfig(store="x", queue_size=2)


def returns_within(fn, seconds: float = 20.0) -> None:
    """Run `fn` on a thread; fail if it has not returned (a blocked control side) by `seconds`."""
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "the control side blocked on the recorder"


def test_a_hung_writer_never_blocks_ticks_and_the_episode_with_a_hole_is_not_stored(tmp_path: Path) -> None:
    rec = EpisodeRecorder(RecorderConfig(store=str(tmp_path / "s.zarr"), queue_size=64), SCHEMA)
    release = threading.Event()
    append = rec._store.append_episode

    def hung(episode):  # a disk that stopped answering (NFS, a dying SSD)
        release.wait()
        return append(episode)

    rec._store.append_episode = hung
    run_episode(rec, 0.0, 10, True)  # reaches the writer, which hangs in its append
    returns_within(lambda: run_episode(rec, 10.0, 200, True))  # 1,200 items into a 64-slot queue
    assert rec.dropped > 0
    release.set()
    wait_for(lambda: rec.counters()["recorder_queue"] == 0, 20, "the writer to catch up")
    run_episode(rec, 30.0, 10, False)
    rec.close()
    assert (rec.stored, rec.incomplete) == (2, 1)
    with EpisodeStore.open(tmp_path / "s.zarr") as s:
        assert [len(s.episode(i)) for i in range(s.n_episodes)] == [10, 10]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_dead_writer_never_blocks_ticks(tmp_path: Path) -> None:
    rec = EpisodeRecorder(RecorderConfig(store=str(tmp_path / "s.zarr"), queue_size=32), SCHEMA)

    def die(*_):
        raise SystemExit  # ends the writer thread without a trace, as a killed thread would
    rec._write = die
    run_episode(rec, 0.0, 3, True)
    wait_for(lambda: not rec.alive, 20, "the writer to die")
    returns_within(lambda: run_episode(rec, 1.0, 100, True))
    assert rec.dropped > 0 and rec.counters()["recorder_alive"] == 0.0
    returns_within(rec.close)


FULL_DISK_SCRIPT = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from real.recorder import EpisodeRecorder, RecorderConfig
    from vla.data.schema import StoreSchema
    from vla.data.store import EpisodeStore
    store = sys.argv[1]
    schema = StoreSchema(cameras={"front": (64, 64)}, state_dim=2, action_dim=2)
    rec = EpisodeRecorder(RecorderConfig(store=store), schema)
    rng = np.random.default_rng(0)
    for e in range(12):  # incompressible images: each episode takes ~0.5 MB, the disk holds 2 MB
        for k in range(40):
            rec.joint_state(e + k * 0.05, np.zeros(2))
            rec.tick(e + k * 0.05, np.zeros(2), None, 0, None,
                     {"front": rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)}, "go")
        rec.end_episode(True)
        time.sleep(0.3)
    rec.close(timeout=60)
    with EpisodeStore.open(store) as s:
        s.verify()
        n = s.n_episodes
    print(json.dumps({"stored": rec.stored, "failed": rec.failed, "n_episodes": n, "error": rec.last_error}))
""")


@pytest.mark.slow
@pytest.mark.host  # a container may refuse a private mount namespace: not a part the project installs
def test_a_full_disk_loses_only_the_episodes_that_do_not_fit(tmp_path: Path) -> None:
    """A real 2 MB tmpfs (a private mount namespace): writes fail with ENOSPC inside zarr."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    probe = ["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=1m none {mnt}"]
    if not shutil.which("unshare") or subprocess.run(probe, capture_output=True).returncode:
        pytest.skip("no private mount namespace with tmpfs here (unshare -rm + mount) for a real full disk")
    script = tmp_path / "full_disk.py"
    script.write_text(FULL_DISK_SCRIPT)
    root = Path(__file__).resolve().parents[2]
    cmd = f"mount -t tmpfs -o size=2m none {mnt} && {sys.executable} {script} {mnt}/s.zarr"
    out = subprocess.run(["unshare", "-rm", "sh", "-c", cmd], capture_output=True, text=True, cwd=root,
                         timeout=300, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    import json

    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["stored"] >= 1 and res["failed"] >= 1, res
    assert res["n_episodes"] == res["stored"]  # what was committed before the disk filled is intact
    assert "No space left" in res["error"] or "Errno 28" in res["error"], res


def test_an_episode_without_joint_states_is_refused_not_made_up(tmp_path: Path) -> None:
    rec = EpisodeRecorder(RecorderConfig(store=str(tmp_path / "s.zarr")), SCHEMA)
    for k in range(5):
        rec.tick(k * DT, np.zeros(2), None, -1, None, {"front": image(k)}, "go")
    rec.end_episode(True)
    run_episode(rec, 10.0, 5, True)
    rec.close()
    assert (rec.stored, rec.failed) == (1, 1) and "no joint state" in rec.last_error
