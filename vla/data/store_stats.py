"""Statistics of an EpisodeStore's keys (what normalisation uses), updated incrementally.

Statistics of the whole store are cached in `stats_cache.npz` together with the number of
episodes they cover; because committed episodes never change, the next call only reads the
episodes appended since. The cache is replaced atomically (temp file + rename) and holds plain
arrays only (loaded with allow_pickle=False). Filtered statistics (a subset of episodes) are
computed afresh. Before cached figures are served, the covered chunks' stored bytes are checked
(`EpisodeStore.verify`), so a cache never hides a damaged or deleted chunk.

Image statistics are per channel in pixel units (0..255) and exact (256-bin histograms).
"""

from __future__ import annotations

import os
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from vla.data.schema import IMAGE_PREFIX
from vla.data.stats import ByteHistogramStats, RunningStats, Stats


class EpisodeStore(Protocol):
    """What the statistics read of a store (vla.data.store.EpisodeStore, which calls them: `stats()`)."""

    path: Path
    mode: str
    schema: Any

    @property
    def n_episodes(self) -> int: ...

    @property
    def step_keys(self) -> list[str]: ...

    def table(self) -> Any: ...

    def read(self, key: str, start: int, stop: int) -> Any: ...

    def verify(self, *args: Any, **kwargs: Any) -> Any: ...

STATS_KEYS = ("state", "action", "reward")
CACHE_FILE = "stats_cache.npz"
Accumulator = RunningStats | ByteHistogramStats


def default_stats_keys(store: EpisodeStore) -> list[str]:
    return [*STATS_KEYS, *(k for k in store.step_keys if k.startswith(IMAGE_PREFIX))]


def _rows(key: str, values: np.ndarray) -> np.ndarray:
    if key.startswith(IMAGE_PREFIX):
        return values.reshape(-1, values.shape[-1])
    return values.reshape(len(values), -1)


def _update(acc: Accumulator, key: str, values: np.ndarray) -> None:
    acc.update(_rows(key, values))


def _new_accumulator(store: EpisodeStore, key: str) -> Accumulator:
    if key.startswith(IMAGE_PREFIX):
        return ByteHistogramStats(store.schema.step_shapes()[key][-1])
    shape = store.schema.step_shapes()[key]
    return RunningStats(int(np.prod(shape)) if shape else 1)


def _load_accumulator(key: str, arrays: dict[str, np.ndarray]) -> Accumulator:
    if key.startswith(IMAGE_PREFIX):
        return ByteHistogramStats.from_state_arrays(arrays, key)
    return RunningStats.from_state_arrays(arrays, key)


def _accumulate(store: EpisodeStore, accs: dict[str, Accumulator], episodes: list[int],
                block_steps: int = 4096) -> None:
    """Feed the steps of `episodes` to the accumulators, reading contiguous runs in large blocks."""
    table = store.table()
    runs: list[tuple[int, int]] = []
    for ep in episodes:
        start, end = int(table.episode_starts[ep]), int(table.episode_ends[ep])
        if runs and runs[-1][1] == start:
            runs[-1] = (runs[-1][0], end)
        else:
            runs.append((start, end))
    for run_start, run_end in runs:
        for lo in range(run_start, run_end, block_steps):
            hi = min(lo + block_steps, run_end)
            for key, acc in accs.items():
                _update(acc, key, store.read(key, lo, hi))


def store_stats(store: EpisodeStore, keys: Iterable[str] | None = None,
                episodes: np.ndarray | None = None) -> dict[str, Stats]:
    """Statistics per key over all committed episodes (cached, incremental) or a given subset."""
    keys = default_stats_keys(store) if keys is None else list(keys)
    for key in keys:
        store.read(key, 0, 0)  # raises a KeyError that names the valid keys
    if episodes is not None:
        accs = {k: _new_accumulator(store, k) for k in keys}
        _accumulate(store, accs, [int(e) for e in episodes])
        return {k: acc.finish() for k, acc in accs.items()}

    cache_path = store.path / CACHE_FILE
    covered, accs = 0, {}
    arrays = _load_cache(cache_path)
    if arrays:
        cached_keys = [k for k in keys if f"{k}.mean" in arrays or f"{k}.hist" in arrays]
        if len(cached_keys) == len(keys) and int(arrays["covered"]) <= store.n_episodes:
            covered = int(arrays["covered"])
            accs = {k: _load_accumulator(k, arrays) for k in keys}
            # Cached figures skip the reads that would find a damaged chunk: check the stored bytes
            # of the covered steps (existence + crc32c, no decoding) before serving them.
            if covered:
                store.verify(keys, stop_step=int(store.table().episode_ends[covered - 1]))
    if not accs:
        accs = {k: _new_accumulator(store, k) for k in keys}
    n = store.n_episodes
    if n > covered:
        _accumulate(store, accs, list(range(covered, n)))
        if store.mode == "a" or os.access(store.path, os.W_OK):
            _save_cache(cache_path, accs, n)
    return {k: acc.finish() for k, acc in accs.items()}


def _digest(arrays: dict[str, np.ndarray]) -> int:
    crc = 0
    for name in sorted(arrays):
        if name != "crc32":
            crc = zlib.crc32(np.ascontiguousarray(arrays[name]).tobytes(), zlib.crc32(name.encode(), crc))
    return crc


def _load_cache(path: Path) -> dict[str, np.ndarray]:
    """The cache's arrays, or {} when it is absent, unreadable or fails its checksum: it is derived
    data, recomputed from the (verified) chunks rather than trusted."""
    if not path.exists():
        return {}
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {name: z[name] for name in z.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile):
        return {}
    if "crc32" not in arrays or "covered" not in arrays or int(arrays["crc32"]) != _digest(arrays):
        return {}
    return arrays


def _save_cache(path: os.PathLike, accs: dict[str, Accumulator], covered: int) -> None:
    arrays: dict[str, np.ndarray] = {"covered": np.array(covered)}
    for key, acc in accs.items():
        arrays.update(acc.state_arrays(key))
    arrays["crc32"] = np.array(_digest(arrays), np.int64)
    tmp = f"{path}.{os.getpid()}.tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, path)
