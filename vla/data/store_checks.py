"""Consistency checks of an EpisodeStore: array layout on open, episode metadata, damaged chunks.

Every check ends in one `StoreError` line naming the key (and the episode and the file where
they apply), so a damaged store is never read as plausible wrong data:

- layout (on open): every array of the schema exists, with the schema's per-step shape and
  dtype and at least as many rows as the commit record commits (an edited shape is an error,
  not 8-dim states);
- episode metadata (when the episode table is read): ends increasing from a positive first
  length up to the commit record's `n_steps`, intervention/recovery counts within the length,
  known sources (a store wiped under a live writer once showed negative lengths);
- chunks (on read): a chunk file missing, failing its crc32c or failing to decode names itself;
- chunk positions: a chunk's crc32c travels with its bytes, so a chunk file swapped with another
  (or copied over one) passes its own check and reads as wrong data. The commit record therefore
  binds every step-data chunk to its array and chunk key (`chunk_crc`, below); a chunk at the
  wrong place is an error naming the array and both chunk keys;
- metadata digests: the commit record carries a running crc32 of every per-episode column
  (`meta_crc`, updated in O(1) per append), so metadata edited after its commit, even through
  zarr with valid chunk checksums (shifted episode boundaries, relabelled success), is an error;
  the commit record itself carries a crc32 of its other attributes (`record_crc`), so an edited
  schema, fps or count that still parses is an error too.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from vla.data.schema import SOURCES, StoreSchema
from vla.data.store_files import StoreError

META_DTYPES: dict[str, Any] = {"episode_ends": np.int64, "task": str, "instruction": str, "source": str,
                               "success": bool, "seed": np.int64, "n_intervention_steps": np.int64,
                               "n_recovery_steps": np.int64}


def first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")


def describe_cause(e: BaseException) -> str:
    """What a decode failure means for the user (the codec's own words are kept after it)."""
    text = str(e)
    if "checksum" in text.lower():
        return "checksum mismatch: the chunk file was altered or truncated"
    return f"the chunk cannot be decoded (truncated or corrupt; {first_line(e)})"


def open_array(root: zarr.Group, path: Path, name: str) -> zarr.Array:
    try:
        arr = root[name]
    except KeyError:
        raise StoreError(f"{path / name}: key '{name}' is missing from the store") from None
    except Exception as e:  # a damaged array zarr.json: JSON, codec or metadata errors alike
        raise StoreError(f"{path / name / 'zarr.json'}: key '{name}': unreadable array metadata "
                         f"({first_line(e)})") from None
    if not isinstance(arr, zarr.Array):
        raise StoreError(f"{path / name}: key '{name}' is a group, expected an array")
    return arr


def check_layout(root: zarr.Group, path: Path, schema: StoreSchema, n_episodes: int,
                 n_steps: int) -> dict[str, zarr.Array]:
    """Open every array and check it against the schema and the commit record."""
    arrays: dict[str, zarr.Array] = {}
    for key, shape in schema.step_shapes().items():
        name = f"data/{key}"
        arr = arrays[name] = open_array(root, path, name)
        _check(arr, path, name, shape, np.dtype(schema.step_dtype(key)), n_steps, "steps")
    for key, dtype in META_DTYPES.items():
        name = f"meta/{key}"
        arr = arrays[name] = open_array(root, path, name)
        _check(arr, path, name, (), None if dtype is str else np.dtype(dtype), n_episodes, "episodes")
        if dtype is str and np.dtype(arr.dtype).kind not in "TOU":
            raise StoreError(f"{path / name}: key '{name}': dtype {arr.dtype}, expected strings")
    return arrays


def _check(arr: zarr.Array, path: Path, name: str, shape: tuple[int, ...], dtype: np.dtype | None,
           committed: int, unit: str) -> None:
    if tuple(arr.shape[1:]) != tuple(shape) or tuple(arr.chunks[1:]) != tuple(shape):
        raise StoreError(f"{path / name}: key '{name}': shape {tuple(arr.shape)} (chunks {tuple(arr.chunks)}), "
                         f"the store's schema says (T, {', '.join(map(str, shape))})".replace(", )", ")"))
    if dtype is not None and np.dtype(arr.dtype) != dtype:
        raise StoreError(f"{path / name}: key '{name}': dtype {arr.dtype}, the store's schema says {dtype}")
    if arr.shape[0] < committed:
        raise StoreError(f"{path / name}: key '{name}': {arr.shape[0]} rows, the commit record commits "
                         f"{committed} {unit} (the array was truncated)")


def check_table(cols: dict[str, np.ndarray], path: Path, n_steps: int) -> None:
    """Reject inconsistent per-episode metadata, naming the key and the first bad episode."""
    ends = np.asarray(cols["episode_ends"], np.int64)
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    lengths = ends - starts
    bad = np.flatnonzero(lengths <= 0)
    if bad.size:
        i = int(bad[0])
        raise StoreError(f"{path}: key 'meta/episode_ends', episode {i}: end {ends[i]} after start {starts[i]} "
                         f"gives length {lengths[i]} (inconsistent episode metadata)")
    if len(ends) and ends[-1] != n_steps:
        raise StoreError(f"{path}: key 'meta/episode_ends', episode {len(ends) - 1}: end {ends[-1]}, but the commit "
                         f"record says {n_steps} steps (inconsistent episode metadata)")
    for key in ("n_intervention_steps", "n_recovery_steps"):
        values = np.asarray(cols[key], np.int64)
        bad = np.flatnonzero((values < 0) | (values > lengths))
        if bad.size:
            i = int(bad[0])
            raise StoreError(f"{path}: key 'meta/{key}', episode {i}: {values[i]} steps in an episode of "
                             f"{lengths[i]} (inconsistent episode metadata)")
    sources = np.asarray(cols["source"], dtype=object)
    bad = np.flatnonzero(~np.isin(sources, SOURCES))
    if bad.size:
        i = int(bad[0])
        raise StoreError(f"{path}: key 'meta/source', episode {i}: unknown source {sources[i]!r} "
                         f"(inconsistent episode metadata)")


def episodes_of_steps(ends: np.ndarray | None, lo: int, hi: int) -> str:
    """'episodes a-b (steps lo-hi)' for the step rows [lo, hi)."""
    steps = f"steps {lo}-{hi - 1}"
    if ends is None or not len(ends) or hi <= lo:
        return steps
    first = int(np.searchsorted(ends, lo, side="right"))
    last = int(np.searchsorted(ends, hi - 1, side="right"))
    if first >= len(ends):
        return f"{steps}, past the committed episodes"
    last = min(last, len(ends) - 1)
    eps = f"episode {first}" if first == last else f"episodes {first}-{last}"
    return f"{eps} ({steps})"


def episodes_of_rows(lo: int, hi: int) -> str:
    return f"episode {lo}" if hi - lo == 1 else f"episodes {lo}-{hi - 1}"


def meta_digest(key: str, values: np.ndarray, crc: int = 0) -> int:
    """Running crc32 of a per-episode column: crc32 streams, so digesting episode by episode at
    append time gives the same value as digesting the whole column when it is read."""
    if META_DTYPES[key] is str:
        data = b"".join(str(v).encode("utf-8", "surrogatepass") + b"\0" for v in values)
    else:
        data = np.ascontiguousarray(np.asarray(values).astype(np.dtype(META_DTYPES[key]).newbyteorder("<"))).tobytes()
    return zlib.crc32(data, crc)


def check_meta_digests(cols: dict[str, np.ndarray], expected: dict[str, int], path: Path,
                       inconsistency: StoreError | None = None) -> None:
    """Raise for columns that differ from the commit record's digests. An inconsistency found by
    `check_table` is raised as is unless the digests show that another column was edited (ends
    moved by hand show up as impossible intervention counts of the next episode)."""
    n = len(cols["episode_ends"])
    edited = [k for k, want in expected.items() if k in cols and meta_digest(k, cols[k]) != int(want)]
    if inconsistency is not None and (not edited or any(f"'meta/{k}'" in str(inconsistency) for k in edited)):
        raise inconsistency
    if edited:
        key = edited[0]
        raise StoreError(f"{path / 'meta' / key}: key 'meta/{key}', episodes 0-{n - 1}: does not match the "
                         "commit record's digest (edited after it was committed)"
                         + (f"; {inconsistency}" if inconsistency is not None else ""))

# Commit-record field binding step-data chunks to their positions:
#   {"version": 1, "steps": N, "sealed": {key: hex}, "tail": {key: crc32}}
# `sealed[key]` concatenates, 8 hex digits per chunk in chunk order, the crc32c each full chunk of
# the committed range ends in; full chunks below the committed end are never rewritten, so a reader
# can compare their trailers while a writer appends. The last, partly filled chunk is rewritten
# by the next append (its stored bytes change while its committed rows do not), so `tail[key]` is
# the crc32 of its committed rows' values instead. `steps` is the commit the record describes: a
# record left behind by older code appending without it still binds its sealed chunks.
# Episode metadata columns need no entry: `meta_crc` digests their values in order.
CHUNK_RECORD = "chunk_crc"
CHUNK_RECORD_VERSION = 1


def empty_chunk_record() -> dict[str, Any]:
    return {"version": CHUNK_RECORD_VERSION, "steps": 0, "sealed": {}, "tail": {}}


def rows_digest(values: np.ndarray) -> int:
    """crc32 of rows' values as stored (little-endian): the digest of a last chunk's committed rows."""
    a = np.asarray(values)
    return zlib.crc32(np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<"))).tobytes())


def parse_chunk_record(value: Any, path: Path) -> dict[str, Any] | None:
    """The commit record's chunk position record, None when it has none (stores written before it)
    or one of a version this code does not know (their chunks are then checked as before)."""
    if value is None or (isinstance(value, dict) and value.get("version") != CHUNK_RECORD_VERSION):
        return None
    try:
        steps, sealed, tail = int(value["steps"]), dict(value["sealed"]), dict(value["tail"])
        for key, hexs in sealed.items():
            if not isinstance(hexs, str) or len(hexs) % 8:
                raise ValueError(f"sealed checksums of '{key}' are not 8 hex digits each")
            int(hexs or "0", 16)
        tail = {str(k): int(v) for k, v in tail.items()}
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise StoreError(f"{path / 'zarr.json'}: damaged commit record ({CHUNK_RECORD}: {first_line(e)})") from None
    return {"version": CHUNK_RECORD_VERSION, "steps": steps, "sealed": sealed, "tail": tail}


def sealed_crc(record: dict[str, Any] | None, key: str, index: int) -> int | None:
    """The crc32c a position record binds to full chunk `index` of step key `key`, if it records one."""
    hexs = record["sealed"].get(key, "") if record is not None else ""
    return int(hexs[8 * index:8 * index + 8], 16) if index < len(hexs) // 8 else None


def recorded_position(record: dict[str, Any] | None, trailer: int | None, own: tuple[str, int]
                      ) -> tuple[str, int] | None:
    """Where else the record binds a chunk with this crc32c trailer: (key, chunk index), the chunk's own
    key searched first; None when nowhere but `own`."""
    sealed = record["sealed"] if record is not None else {}
    for key in [own[0], *(k for k in sealed if k != own[0])]:
        for j in range(len(sealed.get(key, "")) // 8):
            if (key, j) != own and trailer == sealed_crc(record, key, j):
                return key, j
    return None


def record_digest(attrs: dict[str, Any]) -> int:
    body = {k: v for k, v in attrs.items() if k != "record_crc"}
    return zlib.crc32(json.dumps(body, sort_keys=True).encode())


def with_record_digest(attrs: dict[str, Any]) -> dict[str, Any]:
    return {**attrs, "record_crc": record_digest(attrs)}
