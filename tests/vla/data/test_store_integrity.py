"""The writer lock covers create(overwrite=True), episode metadata is checked,
corruption is an error naming the key, the episode and the file, half-created stores are replaced."""

import json
import subprocess
import sys
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
import zarr
from zarr.codecs import BloscCodec

from vla.data.dataset import WindowDataset
from vla.data.store import EpisodeStore, StoreError, StoreRepairWarning
from vla.data.synthetic import default_schema, synthetic_episode

SCHEMA = default_schema(image_size=8)


def make_store(path: Path, episodes: int = 4) -> EpisodeStore:
    s = EpisodeStore.create(path, SCHEMA, image_chunk=4, lowdim_chunk=16)
    for seed in range(episodes):
        s.append_episode(synthetic_episode(SCHEMA, seed, length=10))
    return s


def chunk(path: Path, key: str, index: int = 1) -> Path:
    files = sorted((path / key / "c").rglob("*"), key=lambda f: [int(x) for x in f.relative_to(path / key / "c").parts])
    return [f for f in files if f.is_file()][index]


def read_everything(path: Path) -> None:
    s = EpisodeStore.open(path)
    for i in range(s.n_episodes):
        s.episode(i)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    make_store(tmp_path / "s.zarr").close()
    return tmp_path / "s.zarr"


def test_overwrite_refuses_a_store_another_process_writes(store_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from vla.data.store import EpisodeStore\n"
        f"s = EpisodeStore.open({str(store_path)!r}, mode='a'); print('READY', flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().startswith("READY")
        with pytest.raises(StoreError, match=r"s\.zarr: another process is writing"):
            EpisodeStore.create(store_path, SCHEMA, overwrite=True)
    finally:
        holder.kill()
        holder.wait()
    assert EpisodeStore.open(store_path).n_episodes == 4  # untouched
    EpisodeStore.create(store_path, SCHEMA, overwrite=True).close()  # the lock is free now
    assert EpisodeStore.open(store_path).n_episodes == 0


def test_inconsistent_episode_metadata_is_named(store_path: Path) -> None:
    ends = zarr.open_array(store_path / "meta" / "episode_ends", mode="r+")
    ends[2] = 5  # episode 2 would have a negative length
    with pytest.raises(StoreError, match=r"key 'meta/episode_ends'.*episode 2"):
        EpisodeStore.open(store_path).table()
    res = subprocess.run([sys.executable, "-m", "vla.cli", "data", "info", str(store_path)], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "episode_ends" in res.stderr, res.stderr


def test_metadata_edited_after_commit_is_detected(store_path: Path) -> None:
    success = zarr.open_array(store_path / "meta" / "success", mode="r+")
    success[1] = not success[1]  # valid chunk checksums, plausible value: only the digest tells
    with pytest.raises(StoreError, match=r"key 'meta/success'.*edited after it was committed"):
        EpisodeStore.open(store_path).table()


@pytest.mark.parametrize(("damage", "needle"), [
    (lambda f: f.write_bytes(f.read_bytes()[:-1] + bytes([f.read_bytes()[-1] ^ 1])), "checksum mismatch"),
    (lambda f: f.write_bytes(f.read_bytes()[: len(f.read_bytes()) // 2]), "checksum mismatch"),
    (lambda f: f.unlink(), "chunk file missing"),
])
def test_damaged_chunk_names_key_episode_and_file(store_path: Path, damage, needle: str) -> None:
    f = chunk(store_path, "data/state", 1)  # steps 16-31: episodes 1-3
    damage(f)
    with pytest.raises(StoreError) as err:
        read_everything(store_path)
    msg = str(err.value)
    assert needle in msg and "key 'state'" in msg and "episodes 1-3" in msg and str(f) in msg, msg


def test_damaged_image_chunk_of_all_zero_flags_is_not_read_as_zeros(store_path: Path) -> None:
    # is_recovery is all False: zarr would skip writing such chunks and read them back as fill values.
    f = chunk(store_path, "data/is_recovery", 0)
    f.unlink()
    with pytest.raises(StoreError, match=r"is_recovery.*chunk file missing"):
        read_everything(store_path)


def test_edited_shape_and_truncated_records(store_path: Path) -> None:
    meta_file = store_path / "data" / "state" / "zarr.json"
    meta = json.loads(meta_file.read_text())
    original = meta_file.read_text()
    meta["shape"][1] += 1
    meta["chunk_grid"]["configuration"]["chunk_shape"][1] += 1
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(StoreError, match=r"key 'data/state': shape \(40, 10\).*schema says \(T, 9\)"):
        EpisodeStore.open(store_path)
    meta_file.write_text(original[:50])
    with pytest.raises(StoreError, match=r"state/zarr\.json: key 'data/state': unreadable array metadata"):
        EpisodeStore.open(store_path)
    meta_file.write_text(original)
    root = store_path / "zarr.json"
    root.write_text(root.read_text()[:-20])
    with pytest.raises(StoreError, match=r"s\.zarr/zarr\.json: damaged commit record"):
        EpisodeStore.open(store_path)


def test_stats_cache_does_not_hide_a_damaged_chunk(store_path: Path) -> None:
    before = EpisodeStore.open(store_path).stats(keys=["state"])  # writes the cache
    f = chunk(store_path, "data/state", 0)
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x40
    f.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=r"key 'state'.*checksum mismatch"):
        EpisodeStore.open(store_path).stats(keys=["state"])
    assert before["state"].count == 40


def test_old_store_without_checksums_still_opens(tmp_path: Path) -> None:
    path = tmp_path / "old.zarr"
    with EpisodeStore.create(path, SCHEMA, lowdim_chunk=16) as s:
        for seed in range(2):
            s.append_episode(synthetic_episode(SCHEMA, seed, length=5))
    # Rewrite it as the code before the integrity checks did: no crc32c codec, no integrity / digest attributes.
    old = zarr.open_group(path, mode="r")
    legacy = tmp_path / "legacy.zarr"
    root = zarr.open_group(legacy, mode="w")
    for name, arr in [*old["data"].arrays(), *old["meta"].arrays()]:
        group = "meta" if name in old["meta"] else "data"
        values = arr[:]
        comp = None if values.dtype.kind in "TOU" else BloscCodec(cname="zstd", clevel=3, shuffle="bitshuffle")
        root.require_group(group).create_array(name, shape=arr.shape, chunks=arr.chunks, dtype=arr.dtype,
                                               compressors=comp)[:] = values
    for cam, arr in old["data/images"].arrays():
        root.require_group("data/images").create_array(cam, shape=arr.shape, chunks=arr.chunks, dtype=arr.dtype)[:] = \
            arr[:]
    attrs = {k: v for k, v in old.attrs.asdict().items() if k not in ("integrity", "meta_crc", "uid", "record_crc")}
    root.attrs.put(attrs)
    reader = EpisodeStore.open(legacy)
    assert reader.integrity == {} and reader.n_episodes == 2 and reader.verify() == 0
    np.testing.assert_array_equal(reader.episode(1).steps["state"], EpisodeStore.open(path).episode(1).steps["state"])
    res = subprocess.run([sys.executable, "-m", "vla.cli", "data", "info", str(legacy)], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0 and "integrity: none" in res.stdout and "read unverified" in res.stdout, res.stderr
    with EpisodeStore.open(legacy, mode="a") as writer:  # appending keeps working
        writer.append_episode(synthetic_episode(SCHEMA, 2, length=5))
    assert EpisodeStore.open(legacy).n_episodes == 3


def test_half_created_store_is_recognised_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "half.zarr"
    zarr.open_group(path, mode="w").create_group("data")  # what the old create left when killed early
    assert not EpisodeStore.exists(path)
    with pytest.raises(StoreError, match="half-created episode store"):
        EpisodeStore.open(path, mode="a")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        EpisodeStore.create(path, SCHEMA).close()
    assert any(issubclass(w.category, StoreRepairWarning) for w in caught)
    assert EpisodeStore.open(path).n_episodes == 0
    # A folder with data in it is never replaced without overwrite=True.
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(StoreError, match="not an episode store; refusing to replace"):
        EpisodeStore.create(tmp_path / "other", SCHEMA)


def test_reader_notices_a_replaced_store(store_path: Path) -> None:
    reader = EpisodeStore.open(store_path)
    EpisodeStore.create(store_path, SCHEMA, overwrite=True).close()
    with pytest.raises(StoreError, match="replaced"):
        reader.refresh()


def swap(a: Path, b: Path) -> None:
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b)
    b.write_bytes(data_a)


def verify_cli(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vla.cli", "data", "verify", str(path)], capture_output=True,
                          text=True, timeout=120)


def info_cli(path: Path) -> subprocess.CompletedProcess:
    res = subprocess.run([sys.executable, "-m", "vla.cli", "data", "info", str(path)], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return res


# 40 steps in chunks of 16 (low-dim: c/0 and c/1 full, c/2 the last, partly filled) and 4 (images).
@pytest.mark.parametrize(("key_a", "a", "key_b", "b", "needles"), [
    ("data/action", "c/0/0", "data/action", "c/1/0",
     ["c/0/0 holds the chunk recorded for c/1/0", "c/1/0 holds the chunk recorded for c/0/0"]),
    ("data/state", "c/1/0", "data/state", "c/2/0", ["c/1/0 does not hold", "c/2/0 holds the chunk recorded for c/1/0"]),
    ("data/images/agentview", "c/2/0/0/0", "data/images/agentview", "c/7/0/0/0",
     ["c/2/0/0/0 holds the chunk recorded for c/7/0/0/0", "c/7/0/0/0 holds the chunk recorded for c/2/0/0/0"]),
    # same shape and dtype, both the last chunk of their array: only the rows' digest binds them
    ("data/is_intervention", "c/2", "data/is_recovery", "c/2", ["c/2 does not hold the chunk recorded"]),
])
def test_swapped_chunk_files_are_named_by_verify_and_refused_on_read(
        store_path: Path, key_a: str, a: str, key_b: str, b: str, needles: list[str]) -> None:
    original = {k: EpisodeStore.open(store_path).read(k, 0, 40) for k in ("action", "state", "images/agentview")}
    swap(store_path / key_a / a, store_path / key_b / b)  # each file still passes its own crc32c
    res = verify_cli(store_path)
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert f"{store_path / key_a}: key '{key_a.removeprefix('data/')}'" in res.stderr, res.stderr
    assert "not at their recorded positions" in res.stderr and all(n in res.stderr for n in needles), res.stderr
    with pytest.raises(StoreError, match=f"key '{key_a.removeprefix('data/')}'.*not at their recorded positions"):
        read_everything(store_path)
    with pytest.raises(StoreError, match="not at their recorded positions"):  # the training path reads it too
        WindowDataset(EpisodeStore.open(store_path), obs_horizon=1, action_horizon=4, cache="memory")
    swap(store_path / key_a / a, store_path / key_b / b)  # nothing was lost: put back, it reads as before
    assert verify_cli(store_path).returncode == 0
    for k, values in original.items():
        np.testing.assert_array_equal(EpisodeStore.open(store_path).read(k, 0, 40), values)


def test_store_without_position_record_verifies_and_gets_one_on_append(store_path: Path) -> None:
    # A store written before chunk positions were recorded: checksums, no `chunk_crc` in its record.
    root = store_path / "zarr.json"
    meta = json.loads(root.read_text())
    attrs = {k: v for k, v in meta["attributes"].items() if k not in ("chunk_crc", "record_crc")}
    meta["attributes"] = {**attrs, "record_crc": zlib.crc32(json.dumps(attrs, sort_keys=True).encode())}
    root.write_text(json.dumps(meta))
    res = verify_cli(store_path)
    assert res.returncode == 0 and "4 episodes" in res.stdout and "no damage found" in res.stdout, res.stderr
    read_everything(store_path)
    assert "chunk positions not recorded yet" in info_cli(store_path).stdout
    with EpisodeStore.open(store_path, mode="a") as writer:  # the next append records every chunk's position
        writer.append_episode(synthetic_episode(SCHEMA, 4, length=10))
    assert verify_cli(store_path).returncode == 0
    assert "checksums bound to their positions" in info_cli(store_path).stdout
    swap(store_path / "data/action/c/0/0", store_path / "data/action/c/1/0")
    res = verify_cli(store_path)
    assert res.returncode == 2 and "c/0/0 holds the chunk recorded for c/1/0" in res.stderr, res.stderr


def test_reader_checks_positions_while_a_writer_rewrites_the_last_chunk(store_path: Path) -> None:
    reader = EpisodeStore.open(store_path)  # commit of 40 steps: c/2 holds steps 32-39
    with EpisodeStore.open(store_path, mode="a") as writer:
        writer.append_episode(synthetic_episode(SCHEMA, 4, length=5))  # rewrites c/2 with steps 40-44 added
    assert reader.verify() > 0 and reader.read("action", 0, 40).shape == (40, 7)
    assert reader.refresh() == 5 and reader.verify() > 0
