"""EpisodeStore: an append-only, crash-safe episode store on zarr (v3 format).

Layout (in the style of diffusion_policy's ReplayBuffer)::

    store.zarr/
      zarr.json                 root attrs: schema, n_episodes, n_steps  <- the commit record
      data/<key>                one array per step key, time first, chunked along time
      data/images/<camera>      uint8 [T, H, W, 3]
      meta/episode_ends         int64 [n_episodes], exclusive end index of each episode
      meta/{task,instruction,source,success,seed,n_intervention_steps,n_recovery_steps}
      writer.lock               flock held by the single writer
      stats_cache.npz           incremental normalisation statistics (a prefix of episodes)

Crash safety. zarr's LocalStore writes every file (chunk or metadata) to a temporary name and
renames it into place, so each file is always either its old or its new version. An append
writes the step data and the per-episode metadata past the committed end, then commits by
rewriting the root attributes (one atomic file). Until that rename, readers and a reopened store
see only the previous episodes; chunks shared with committed episodes are rewritten whole and
atomically, so committed values never change. Reopening for writing truncates arrays to the
committed length and removes temporary files left by a killed writer.

Concurrency: one writer (enforced with flock, `create(overwrite=True)` included) and any number
of readers in other processes; readers call `refresh()` to see newly committed episodes.

Creation is crash-safe (built beside the path and renamed into place: `store_files.py`).
Integrity (stores created by this code, root attribute `integrity`): every chunk ends in a crc32c
checksum (zarr's `crc32c` codec after the compressor) and every chunk of the committed range is
written even when it holds only fill values, so a flipped byte, a truncated or a deleted chunk is
a `StoreError` naming the key, the episodes and the file instead of plausible wrong data or zeros.
A chunk's own checksum travels with its bytes, so the commit record also binds every step-data
chunk to its array and chunk key (`chunk_crc`, `store_checks.py`): chunk files swapped or copied
over one another are an error naming the array and the chunk keys, on read and in `verify`.
Stores with checksums but no position record (written before it) are checked as before until
their next append, which records the positions of the chunks as they are then.
Stores written before (no `integrity` attribute) still open and append, but their chunks are read
unverified (`vla data info` says so). Layout and episode metadata are checked too (`store_checks.py`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import zarr
from zarr.codecs import BloscCodec, Crc32cCodec

from vla.data.schema import SOURCES, Episode, StoreSchema, closest, validate_episode
from vla.data.store_checks import (
    CHUNK_RECORD,
    CHUNK_RECORD_VERSION,
    META_DTYPES,
    check_layout,
    check_meta_digests,
    check_table,
    describe_cause,
    empty_chunk_record,
    episodes_of_rows,
    episodes_of_steps,
    first_line,
    meta_digest,
    parse_chunk_record,
    record_digest,
    recorded_position,
    rows_digest,
    sealed_crc,
    with_record_digest,
)
from vla.data.store_files import (
    FORMAT_NAME,
    HALF_CREATED,
    StoreError,
    StoreRepairWarning,
    crc_ok,
    folder_state,
    lock_writer,
    place_new_store,
    read_chunk_bytes,
    read_chunk_trailer,
    unlock,
)
from vla.data.store_stats import store_stats

FORMAT_VERSION = 1
META_KEYS = tuple(META_DTYPES)
INTEGRITY = {"checksum": "crc32c", "all_chunks_written": True}
# zarr skips chunks that hold only fill values by default; a store with integrity writes them all,
# so a missing chunk file is damage, never "all zeros".
_WRITE_ALL = {"write_empty_chunks": True}

__all__ = ["FORMAT_NAME", "EpisodeStore", "EpisodeTable", "StoreError", "StoreRepairWarning"]


@dataclass(frozen=True)
class EpisodeTable:
    """Per-episode metadata of the committed episodes, one numpy column per field."""

    episode_ends: np.ndarray
    task: np.ndarray
    instruction: np.ndarray
    source: np.ndarray
    success: np.ndarray
    seed: np.ndarray
    n_intervention_steps: np.ndarray
    n_recovery_steps: np.ndarray

    @property
    def episode_starts(self) -> np.ndarray:
        return np.concatenate([[0], self.episode_ends[:-1]]).astype(np.int64)

    @property
    def lengths(self) -> np.ndarray:
        return self.episode_ends - self.episode_starts

    def __len__(self) -> int:
        return len(self.episode_ends)


class EpisodeStore:
    """Open with `EpisodeStore.create(path, schema)` or `EpisodeStore.open(path, mode="r"|"a")`."""

    def __init__(self, path: Path, mode: str, lock_fd: int | None = None) -> None:
        self.path = Path(path)
        self.mode = mode
        self._lock_fd: int | None = lock_fd
        self._arrays: dict[str, zarr.Array] = {}
        try:
            self._open(mode)
        except BaseException:
            self.close()
            raise

    def _open(self, mode: str) -> None:
        if not (self.path / "zarr.json").exists():
            if folder_state(self.path) == "half_created":
                raise StoreError(f"{self.path}: {HALF_CREATED}")
            raise StoreError(f"{self.path}: no episode store here (missing zarr.json); create one first")
        if mode == "a" and self._lock_fd is None:
            self._lock_fd = lock_writer(self.path)
        attrs = self._read_commit_record()
        if "record_crc" in attrs and attrs["record_crc"] != record_digest(attrs):
            raise StoreError(f"{self.path / 'zarr.json'}: damaged commit record (does not match its checksum)")
        if attrs.get("format") != FORMAT_NAME:
            if not attrs and folder_state(self.path) == "half_created":
                raise StoreError(f"{self.path}: {HALF_CREATED}")
            raise StoreError(f"{self.path}: not a {FORMAT_NAME} (format={attrs.get('format')!r})")
        if attrs.get("version") != FORMAT_VERSION:
            raise StoreError(f"{self.path}: store version {attrs.get('version')}, this code reads {FORMAT_VERSION}")
        record = self.path / "zarr.json"
        try:
            self.schema = StoreSchema.from_json(attrs["schema"])
            self._n_episodes, self._n_steps = int(attrs["n_episodes"]), int(attrs["n_steps"])
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            raise StoreError(f"{record}: damaged commit record ({first_line(e)})") from None
        if self._n_episodes < 0 or self._n_steps < 0 or (self._n_episodes == 0) != (self._n_steps == 0):
            raise StoreError(f"{record}: damaged commit record ({self._n_episodes} episodes, {self._n_steps} steps)")
        self.uid = attrs.get("uid")
        self._meta_crc: dict[str, int] = dict(attrs.get("meta_crc") or {})
        self.integrity: dict[str, Any] = dict(attrs.get("integrity") or {})
        self._chunk_rec = parse_chunk_record(attrs.get(CHUNK_RECORD), self.path) if self.integrity else None
        self._tail_ok: set[str] = set()  # data arrays whose last chunk's rows this commit were checked
        self.step_keys = list(self.schema.step_shapes())
        self._table: EpisodeTable | None = None
        self._arrays = check_layout(self._root, self.path, self.schema, self._n_episodes, self._n_steps)
        if mode == "a":
            self._arrays = {k: a.with_config(_WRITE_ALL) for k, a in self._arrays.items()}
            self._recover()

    def _read_commit_record(self) -> dict[str, Any]:
        """Root attributes (the commit record); a damaged file is one error naming it."""
        try:
            self._root = zarr.open_group(self.path, mode="r+" if self.mode == "a" else "r")
            return dict(self._root.attrs)
        except Exception as e:  # JSON, unicode or zarr metadata errors: all mean a damaged record
            raise StoreError(f"{self.path / 'zarr.json'}: damaged commit record ({first_line(e)})") from None

    # ------------------------------------------------------------------ creation / opening
    @classmethod
    def create(cls, path: str | Path, schema: StoreSchema, *, image_chunk: int = 16, lowdim_chunk: int = 1024,
               overwrite: bool = False, clevel: int = 3) -> EpisodeStore:
        """A new, empty store (open for writing). Crash-safe: built beside `path`, renamed into place.

        `overwrite=True` replaces an existing store unless another process holds its writer lock.
        A half-created store (its creator was killed) is replaced with a `StoreRepairWarning`.
        """
        path = Path(path)

        def build(folder: Path) -> None:
            root = zarr.open_group(folder, mode="a")  # not "w": it would delete the held writer.lock
            # crc32c after the compressor: every chunk carries a checksum of its stored bytes.
            compressor = (BloscCodec(cname="zstd", clevel=clevel, shuffle="bitshuffle"), Crc32cCodec())
            image_compressor = (BloscCodec(cname="lz4", clevel=clevel, shuffle="shuffle"), Crc32cCodec())
            data = root.create_group("data")
            for key, shape in schema.step_shapes().items():
                is_image = len(shape) == 3
                data.create_array(key, shape=(0, *shape), chunks=(image_chunk if is_image else lowdim_chunk, *shape),
                                  dtype=schema.step_dtype(key),
                                  compressors=image_compressor if is_image else compressor)
            meta = root.create_group("meta")
            for key, dtype in META_DTYPES.items():
                meta.create_array(key, shape=(0,), chunks=(lowdim_chunk,), dtype=dtype,
                                  compressors=(Crc32cCodec(),) if dtype is str else compressor)
            # The root attributes are written last: a store without them is not a store.
            root.attrs.put(with_record_digest({
                "format": FORMAT_NAME, "version": FORMAT_VERSION, "schema": schema.to_json(), "n_episodes": 0,
                "n_steps": 0, "integrity": INTEGRITY, "uid": uuid.uuid4().hex, "meta_crc": {k: 0 for k in META_KEYS},
                CHUNK_RECORD: empty_chunk_record()}))

        lock_fd = place_new_store(path, build, overwrite)
        return cls(path, mode="a", lock_fd=lock_fd)

    @classmethod
    def open(cls, path: str | Path, mode: str = "r") -> EpisodeStore:
        if mode not in ("r", "a"):
            raise ValueError(f"mode must be 'r' (reader) or 'a' (the single writer), got {mode!r}")
        return cls(Path(path), mode)

    @staticmethod
    def exists(path: str | Path) -> bool:
        """A complete store is at `path` (False for nothing, an empty or a half-created folder, which
        `create` replaces); create-or-append callers branch on this."""
        return folder_state(Path(path)) not in ("missing", "empty", "half_created")

    def close(self) -> None:
        unlock(self._lock_fd)
        self._lock_fd = None

    def __enter__(self) -> EpisodeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def _recover(self) -> None:
        """Discard what a killed writer left past the commit record."""
        for dirpath, _, files in os.walk(self.path):
            for name in files:
                if name.endswith(".partial"):
                    os.unlink(os.path.join(dirpath, name))
        for key in self.step_keys:
            arr = self._array(f"data/{key}", fresh=True)
            if arr.shape[0] != self._n_steps:
                arr.resize((self._n_steps, *arr.shape[1:]))
        for key in META_KEYS:
            arr = self._array(f"meta/{key}", fresh=True)
            if arr.shape[0] != self._n_episodes:
                arr.resize((self._n_episodes,))

    # ------------------------------------------------------------------ reading
    @property
    def n_episodes(self) -> int:
        return self._n_episodes

    @property
    def n_steps(self) -> int:
        return self._n_steps

    def __len__(self) -> int:
        return self._n_episodes

    def refresh(self) -> int:
        """Re-read the commit record (readers); returns the number of committed episodes."""
        try:
            attrs = dict(zarr.open_group(self.path, mode="r").attrs)
            n_episodes, n_steps = int(attrs["n_episodes"]), int(attrs["n_steps"])
            if "record_crc" in attrs and attrs["record_crc"] != record_digest(attrs):
                raise ValueError("does not match its checksum")
        except Exception as e:  # a replaced, removed or damaged commit record
            raise StoreError(f"{self.path / 'zarr.json'}: cannot re-read the commit record ({first_line(e)})") from None
        if attrs.get("uid") != self.uid:
            raise StoreError(f"{self.path}: the store was replaced (created again) since it was opened; open it again")
        if n_episodes != self._n_episodes:
            self._n_episodes, self._n_steps = n_episodes, n_steps
            self._meta_crc = dict(attrs.get("meta_crc") or {})
            self._chunk_rec = parse_chunk_record(attrs.get(CHUNK_RECORD), self.path) if self.integrity else None
            self._tail_ok.clear()
            self._table = None
        return self._n_episodes

    def _array(self, name: str, fresh: bool = False) -> zarr.Array:
        if fresh or name not in self._arrays:
            arr = self._root[name]
            self._arrays[name] = arr.with_config(_WRITE_ALL) if self.mode == "a" else arr  # type: ignore[union-attr]
        return self._arrays[name]

    def _read(self, name: str, start: int, stop: int) -> np.ndarray:
        arr = self._array(name)
        if arr.shape[0] < stop:  # another process grew it since we opened it
            arr = self._array(name, fresh=True)
        if stop <= start:
            return arr[start:stop]
        c = arr.chunks[0]
        if self.integrity.get("all_chunks_written"):
            for i in range(start // c, -(-stop // c)):
                recorded = self._recorded_crc(name, i)
                if recorded is None:
                    if not self._chunk_path(name, arr, i).exists():
                        raise self._damage(name, arr, i, "chunk file missing (its rows would read as fill values)")
                    continue
                # The trailer alone: a full chunk's own crc32c is checked by zarr as it decodes.
                trailer = read_chunk_trailer(self._chunk_path(name, arr, i))
                if trailer is None:
                    raise self._damage(name, arr, i, "chunk file missing (its rows would read as fill values)")
                if trailer != recorded:
                    raise self._misplaced(name, arr, [i])
        try:
            values = arr[start:stop]
        except Exception as e:  # any failure to decode committed bytes is damage: find the chunk
            raise self._locate_damage(name, arr, start, stop, e) from None
        tail = self._n_steps // c
        if name not in self._tail_ok and start // c <= tail < -(-stop // c) and self._recorded_tail(name) is not None:
            if not self._tail_matches(name, arr):
                raise self._misplaced(name, arr, [tail])
            self._tail_ok.add(name)
        return values

    # ------------------------------------------------------------------ chunk positions
    @property
    def chunk_positions_recorded(self) -> bool:
        """The commit record binds the step-data chunks to their positions (see `verify`)."""
        return self._chunk_rec is not None

    def _recorded_crc(self, name: str, index: int) -> int | None:
        """The crc32c the commit record binds to full chunk `index` of data array `name`, if any."""
        return sealed_crc(self._chunk_rec, name.removeprefix("data/"), index) if name.startswith("data/") else None

    def _recorded_tail(self, name: str) -> int | None:
        """The digest of the committed rows of the last, partly filled chunk of data array `name`."""
        rec = self._chunk_rec
        if rec is None or not name.startswith("data/") or rec["steps"] != self._n_steps:
            return None
        return rec["tail"].get(name.removeprefix("data/"))

    def _tail_matches(self, name: str, arr: zarr.Array) -> bool:
        if arr.shape[0] < self._n_steps:  # opened before a writer grew it (this reader refreshed since)
            arr = self._array(name, fresh=True)
        c = arr.chunks[0]
        lo = self._n_steps // c * c
        try:
            rows = arr[lo:self._n_steps]
        except Exception as e:
            raise self._damage(name, arr, lo // c, describe_cause(e)) from None
        return rows_digest(rows) == self._recorded_tail(name)

    def _chunk_key(self, arr: zarr.Array, index: int) -> str:
        return str(arr.metadata.encode_chunk_key((index,) + (0,) * (arr.ndim - 1)))

    def _whose(self, name: str, arr: zarr.Array, index: int) -> str:
        """What chunk file `index` of `name` holds instead of its own: the chunk recorded at another
        position (of this or another array) when its trailer is recorded there."""
        here, key = self._chunk_key(arr, index), name.removeprefix("data/")
        found = recorded_position(self._chunk_rec, read_chunk_trailer(self._chunk_path(name, arr, index)),
                                  (key, index))
        if found is None:
            return f"{here} does not hold the chunk recorded for its position"
        there = self._chunk_key(self._array(f"data/{found[0]}"), found[1])
        return f"{here} holds the chunk recorded for {there if found[0] == key else f'{found[0]!r} {there}'}"

    def _misplaced(self, name: str, arr: zarr.Array, indices: list[int]) -> StoreError:
        """One error for chunks whose stored bytes pass their own checksum but are not the ones the
        commit record binds to their position (a damaged chunk is named as damage instead)."""
        for i in indices:
            data = read_chunk_bytes(self._chunk_path(name, arr, i))
            if data is None:
                return self._damage(name, arr, i, "chunk file missing (its rows would read as fill values)")
            if not crc_ok(data):
                return self._damage(name, arr, i, "checksum mismatch: the chunk file was altered or truncated")
        c = arr.chunks[0]
        lo, hi = min(indices) * c, min((max(indices) + 1) * c, max(self._n_steps, min(indices) * c + 1))
        where = episodes_of_steps(self._episode_ends_or_none(), lo, hi)
        found = "; ".join(self._whose(name, arr, i) for i in indices)
        return StoreError(f"{self.path / name}: key '{name.removeprefix('data/')}', {where}: chunk files not at "
                          f"their recorded positions (swapped or copied; they would read as wrong data): {found}")

    def _next_chunk_record(self, end: int) -> dict[str, Any]:
        """The position record of the commit ending at step `end`, written after the step data:
        the trailers of chunks this append filled, the digest of the new last chunk's rows."""
        rec = self._chunk_rec
        if rec is None or rec["steps"] != self._n_steps:  # written before position records, or by older
            rec = empty_chunk_record()                    # code: record every chunk as it is now
        sealed: dict[str, str] = {}
        tail: dict[str, int] = {}
        for key in self.step_keys:
            name = f"data/{key}"
            arr = self._array(name)
            c = arr.chunks[0]
            hexs = rec["sealed"].get(key, "")[: 8 * (end // c)]
            for i in range(len(hexs) // 8, end // c):
                trailer = read_chunk_trailer(self._chunk_path(name, arr, i))
                if trailer is None or trailer < 0:
                    raise self._damage(name, arr, i, "chunk file missing or truncated after it was written")
                hexs += f"{trailer:08x}"
            sealed[key] = hexs
            if end % c:
                tail[key] = rows_digest(arr[end // c * c:end])
        return {"version": CHUNK_RECORD_VERSION, "steps": end, "sealed": sealed, "tail": tail}

    def _chunk_path(self, name: str, arr: zarr.Array, index: int) -> Path:
        return self.path / name / self._chunk_key(arr, index)

    def _damage(self, name: str, arr: zarr.Array, index: int, problem: str) -> StoreError:
        c = arr.chunks[0]
        lo, hi = index * c, (index + 1) * c
        if name.startswith("meta/"):
            where = episodes_of_rows(lo, min(hi, max(self._n_episodes, lo + 1)))
        else:
            where = episodes_of_steps(self._episode_ends_or_none(), lo, min(hi, max(self._n_steps, lo + 1)))
        key = name.removeprefix("data/")
        return StoreError(f"{self._chunk_path(name, arr, index)}: key '{key}', {where}: {problem}")

    def _locate_damage(self, name: str, arr: zarr.Array, start: int, stop: int, cause: Exception) -> StoreError:
        c = arr.chunks[0]
        for i in range(start // c, -(-stop // c)):
            try:
                arr[i * c:min((i + 1) * c, arr.shape[0])]
            except Exception as e:
                return self._damage(name, arr, i, describe_cause(e))
        return StoreError(f"{self.path / name}: key '{name}', rows {start}-{stop - 1}: unreadable "
                          f"({first_line(cause)})")

    def _episode_ends_or_none(self) -> np.ndarray | None:
        """Episode ends for naming episodes in an error (None if they cannot be read either)."""
        if self._table is not None:
            return self._table.episode_ends
        try:
            return np.asarray(self._array("meta/episode_ends")[: self._n_episodes])
        except Exception:
            return None

    def table(self) -> EpisodeTable:
        if self._table is None:
            n = self._n_episodes
            cols = {k: np.asarray(self._read(f"meta/{k}", 0, n)) for k in META_KEYS}
            for k in ("task", "instruction", "source"):
                cols[k] = np.array([str(v) for v in cols[k]], dtype=object)
            try:
                check_table(cols, self.path, self._n_steps)  # names the episode
                inconsistency = None
            except StoreError as e:
                inconsistency = e
            check_meta_digests(cols, self._meta_crc, self.path, inconsistency)  # names the edited key
            self._table = EpisodeTable(**cols)
        return self._table

    def verify(self, keys: Iterable[str] | None = None, stop_step: int | None = None) -> int:
        """Check the stored bytes of every committed chunk (existence, crc32c and, where the commit
        record binds them, position) decoding only each array's last, partly filled chunk;
        returns the number of chunk files checked (0 for a store written without checksums)."""
        if not self.integrity:
            return 0
        names = [f"data/{k}" for k in (self.step_keys if keys is None else keys)] + \
            [f"meta/{k}" for k in META_KEYS]
        checked = 0
        for name in names:
            arr = self._array(name)
            stop = self._n_episodes if name.startswith("meta/") else self._n_steps if stop_step is None else stop_step
            n_chunks = -(-stop // arr.chunks[0])
            misplaced = []
            for i in range(n_chunks):
                data = read_chunk_bytes(self._chunk_path(name, arr, i))
                if data is None:
                    raise self._damage(name, arr, i, "chunk file missing (its rows would read as fill values)")
                if not crc_ok(data):
                    raise self._damage(name, arr, i, "checksum mismatch: the chunk file was altered or truncated")
                recorded = self._recorded_crc(name, i)
                if recorded is not None and int.from_bytes(data[-4:], "little") != recorded:
                    misplaced.append(i)
                checked += 1
            tail = self._n_steps // arr.chunks[0]
            if tail < n_chunks and self._recorded_tail(name) is not None and not self._tail_matches(name, arr):
                misplaced.append(tail)
            if misplaced:  # all of the array's, so that a swap names both chunk keys
                raise self._misplaced(name, arr, misplaced)
        return checked

    def episode_bounds(self, index: int) -> tuple[int, int]:
        self._check_index(index)
        t = self.table()
        return int(t.episode_starts[index]), int(t.episode_ends[index])

    def read(self, key: str, start: int, stop: int) -> np.ndarray:
        """Step data of `key` over global steps [start, stop), within committed data."""
        if key not in self.step_keys:
            raise KeyError(f"unknown step key '{key}'" + closest(key, self.step_keys))
        if not 0 <= start <= stop <= self._n_steps:
            raise IndexError(f"steps [{start}, {stop}) outside the committed range [0, {self._n_steps})")
        return self._read(f"data/{key}", start, stop)

    def chunk_length(self, key: str) -> int:
        """Steps per zarr chunk of a step key (readers align reads to it)."""
        self.read(key, 0, 0)
        return int(self._array(f"data/{key}").chunks[0])

    def episode(self, index: int, keys: Iterable[str] | None = None) -> Episode:
        start, end = self.episode_bounds(index)
        t = self.table()
        keys = self.step_keys if keys is None else list(keys)
        steps = {k: self.read(k, start, end) for k in keys}
        return Episode(steps=steps, task=str(t.task[index]), instruction=str(t.instruction[index]),
                       success=bool(t.success[index]), source=str(t.source[index]), seed=int(t.seed[index]))

    def select(self, *, task: str | Iterable[str] | None = None, source: str | Iterable[str] | None = None,
               success: bool | None = None, intervention: bool | None = None) -> np.ndarray:
        """Indices of committed episodes matching every given filter.

        `intervention=True` keeps episodes with at least one intervention step, False those with none.
        """
        t = self.table()
        keep = np.ones(len(t), dtype=bool)
        if task is not None:
            tasks = [task] if isinstance(task, str) else list(task)
            keep &= np.isin(t.task, tasks)
        if source is not None:
            sources = [source] if isinstance(source, str) else list(source)
            for s in sources:
                if s not in SOURCES:
                    raise ValueError(f"unknown source '{s}'" + closest(s, SOURCES))
            keep &= np.isin(t.source, sources)
        if success is not None:
            keep &= t.success == success
        if intervention is not None:
            keep &= (t.n_intervention_steps > 0) == intervention
        return np.flatnonzero(keep)

    def _check_index(self, index: int) -> None:
        if not 0 <= index < self._n_episodes:
            raise IndexError(f"episode {index} out of range: the store has {self._n_episodes} committed episodes")

    def nbytes_on_disk(self) -> int:
        return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(self.path) for f in fs)

    # ------------------------------------------------------------------ writing
    def append_episode(self, episode: Episode) -> int:
        """Validate, write and commit one episode; returns its index. Invalid input changes nothing."""
        if self.mode != "a":
            raise StoreError(f"{self.path}: opened read-only; open with mode='a' to append")
        index = self._n_episodes
        arrays = validate_episode(episode, self.schema, index)
        length = len(arrays["action"])
        start, end = self._n_steps, self._n_steps + length
        for key, value in arrays.items():
            arr = self._array(f"data/{key}")
            if arr.shape[0] != end:
                arr.resize((end, *arr.shape[1:]))
            arr[start:end] = value
        meta = {"episode_ends": end, "task": episode.task, "instruction": episode.instruction,
                "source": episode.source, "success": bool(episode.success), "seed": int(episode.seed),
                "n_intervention_steps": int(arrays["is_intervention"].sum()),
                "n_recovery_steps": int(arrays["is_recovery"].sum())}
        for key, value in meta.items():
            arr = self._array(f"meta/{key}")
            if arr.shape[0] != index + 1:
                arr.resize((index + 1,))
            arr[index] = value
        # The commit: `put` rewrites the group metadata in one atomic file write. (`attrs.update`
        # would write once per key, and a kill between the two writes tears the record.)
        record = {**self._root.attrs.asdict(), "n_episodes": index + 1, "n_steps": end}
        chunk_rec = self._next_chunk_record(end) if self.integrity else None
        if chunk_rec is not None:
            record[CHUNK_RECORD] = chunk_rec
        digests = self._meta_crc
        if digests:  # stores with digests (created by this code): extend each by this episode
            digests = {k: meta_digest(k, np.array([meta[k]], dtype=object), int(digests.get(k, 0)))
                       for k in META_KEYS}
            record["meta_crc"] = digests
        self._root.attrs.put(with_record_digest(record) if "record_crc" in record else record)
        self._n_episodes, self._n_steps, self._meta_crc = index + 1, end, digests
        self._chunk_rec = chunk_rec
        self._tail_ok.clear()
        self._table = None
        return index

    def stats(self, keys: Iterable[str] | None = None, episodes: np.ndarray | None = None) -> dict[str, Any]:
        return store_stats(self, keys=keys, episodes=episodes)


def open_for_append(path: str | Path, schema: StoreSchema, what: str = "this writer") -> EpisodeStore:
    """Append to the store at `path`, or create it with `schema`; an existing store must hold the same
    cameras, image sizes, state and action dimensions (else a ValueError naming both)."""
    if not EpisodeStore.exists(path):  # nothing, or a half-created folder that create replaces
        return EpisodeStore.create(path, schema)
    store = EpisodeStore.open(path, mode="a")
    have = (store.schema.cameras, store.schema.state_dim, store.schema.action_dim)
    if have != (schema.cameras, schema.state_dim, schema.action_dim):
        store.close()
        raise ValueError(f"{path}: the store holds cameras {have[0]}, state {have[1]}, action {have[2]}; {what} "
                         f"gives cameras {schema.cameras}, state {schema.state_dim}, action {schema.action_dim}")
    return store
