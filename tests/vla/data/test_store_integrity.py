"""Issue 18, items 3-5: the writer lock covers create(overwrite=True), episode metadata is checked,
corruption is an error naming the key, the episode and the file, half-created stores are replaced."""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr
from zarr.codecs import BloscCodec

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
    # Rewrite it as the code before issue 18 did: no crc32c codec, no integrity / digest attributes.
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
