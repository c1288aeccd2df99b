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

Concurrency: one writer (enforced with flock) and any number of readers in other processes;
readers call `refresh()` to see newly committed episodes.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import zarr
from zarr.codecs import BloscCodec

from vla.data.schema import SOURCES, Episode, StoreSchema, closest, validate_episode

FORMAT_NAME = "vla-episode-store"
FORMAT_VERSION = 1
META_KEYS = ("episode_ends", "task", "instruction", "source", "success", "seed", "n_intervention_steps",
             "n_recovery_steps")
_META_DTYPES: dict[str, Any] = {"episode_ends": np.int64, "task": str, "instruction": str, "source": str,
                                "success": bool, "seed": np.int64, "n_intervention_steps": np.int64,
                                "n_recovery_steps": np.int64}


class StoreError(RuntimeError):
    """The store on disk is missing, of another format, or locked by another writer."""


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

    def __init__(self, path: Path, mode: str) -> None:
        self.path = Path(path)
        self.mode = mode
        self._lock_fd: int | None = None
        self._arrays: dict[str, zarr.Array] = {}
        if not (self.path / "zarr.json").exists():
            raise StoreError(f"{self.path}: no episode store here (missing zarr.json); create one first")
        if mode == "a":
            self._acquire_lock()
        self._root = zarr.open_group(self.path, mode="r+" if mode == "a" else "r")
        attrs = dict(self._root.attrs)
        if attrs.get("format") != FORMAT_NAME:
            raise StoreError(f"{self.path}: not a {FORMAT_NAME} (format={attrs.get('format')!r})")
        if attrs.get("version") != FORMAT_VERSION:
            raise StoreError(f"{self.path}: store version {attrs.get('version')}, this code reads {FORMAT_VERSION}")
        self.schema = StoreSchema.from_json(attrs["schema"])
        self.step_keys = list(self.schema.step_shapes())
        self._n_episodes = int(attrs["n_episodes"])
        self._n_steps = int(attrs["n_steps"])
        self._table: EpisodeTable | None = None
        if mode == "a":
            self._recover()

    # ------------------------------------------------------------------ creation / opening
    @classmethod
    def create(cls, path: str | Path, schema: StoreSchema, *, image_chunk: int = 16, lowdim_chunk: int = 1024,
               overwrite: bool = False, clevel: int = 3) -> EpisodeStore:
        path = Path(path)
        if (path / "zarr.json").exists() and not overwrite:
            raise StoreError(f"{path}: a store already exists (pass overwrite=True to replace it)")
        root = zarr.open_group(path, mode="w")
        compressor = BloscCodec(cname="zstd", clevel=clevel, shuffle="bitshuffle")
        image_compressor = BloscCodec(cname="lz4", clevel=clevel, shuffle="shuffle")
        data = root.create_group("data")
        for key, shape in schema.step_shapes().items():
            is_image = len(shape) == 3
            data.create_array(key, shape=(0, *shape), chunks=(image_chunk if is_image else lowdim_chunk, *shape),
                              dtype=schema.step_dtype(key), compressors=image_compressor if is_image else compressor)
        meta = root.create_group("meta")
        for key, dtype in _META_DTYPES.items():
            meta.create_array(key, shape=(0,), chunks=(lowdim_chunk,), dtype=dtype)
        # The root attributes are written last: a store without them is not a store.
        root.attrs.put({"format": FORMAT_NAME, "version": FORMAT_VERSION, "schema": schema.to_json(),
                        "n_episodes": 0, "n_steps": 0})
        store = cls(path, mode="a")
        return store

    @classmethod
    def open(cls, path: str | Path, mode: str = "r") -> EpisodeStore:
        if mode not in ("r", "a"):
            raise ValueError(f"mode must be 'r' (reader) or 'a' (the single writer), got {mode!r}")
        return cls(Path(path), mode)

    def close(self) -> None:
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> EpisodeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def _acquire_lock(self) -> None:
        fd = os.open(self.path / "writer.lock", os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreError(f"{self.path}: another process is writing to this store (writer.lock held)") from None
        self._lock_fd = fd

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
        attrs = dict(zarr.open_group(self.path, mode="r").attrs)
        if int(attrs["n_episodes"]) != self._n_episodes:
            self._n_episodes, self._n_steps = int(attrs["n_episodes"]), int(attrs["n_steps"])
            self._table = None
        return self._n_episodes

    def _array(self, name: str, fresh: bool = False) -> zarr.Array:
        if fresh or name not in self._arrays:
            self._arrays[name] = self._root[name]  # type: ignore[assignment]
        return self._arrays[name]

    def _read(self, name: str, start: int, stop: int) -> np.ndarray:
        arr = self._array(name)
        if arr.shape[0] < stop:  # another process grew it since we opened it
            arr = self._array(name, fresh=True)
        return arr[start:stop]

    def table(self) -> EpisodeTable:
        if self._table is None:
            n = self._n_episodes
            cols = {k: np.asarray(self._read(f"meta/{k}", 0, n)) for k in META_KEYS}
            for k in ("task", "instruction", "source"):
                cols[k] = np.array([str(v) for v in cols[k]], dtype=object)
            self._table = EpisodeTable(**cols)
        return self._table

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
        self._root.attrs.put({**self._root.attrs.asdict(), "n_episodes": index + 1, "n_steps": end})
        self._n_episodes, self._n_steps = index + 1, end
        self._table = None
        return index

    def stats(self, keys: Iterable[str] | None = None, episodes: np.ndarray | None = None) -> dict[str, Any]:
        from vla.data.normalize import store_stats

        return store_stats(self, keys=keys, episodes=episodes)
