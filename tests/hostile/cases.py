"""Hostile inputs for the data / checkpoint / config area and one verdict for each.

A case damages a copy of a valid artefact (store, checkpoint, ONNX export folder) or builds a
malformed input (episode, config, override, `vla refine` demos that do not fit the policy), runs what
a user runs on it, and gets one verdict:

- clear:     an expected error (what `vla` prints as one `error:` line), one line, naming the thing;
- unnamed:   an expected one-line error that does not name the damaged key / file;
- traceback: any other exception, or a multi-line message;
- silent:    no error, and the result differs from the undamaged artefact's;
- harmless:  no error and the exact same result (the damage did not touch anything read).

The tests (tests/hostile/test_*.py) draw cases with hypothesis; tests/hostile/store_soak.py
draws many more with the same functions and writes the counts.
"""

from __future__ import annotations

import json
import random
import shutil
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from vla.cli import _expected, error_line
from vla.data.schema import Episode
from vla.data.store import EpisodeStore
from vla.data.synthetic import default_schema, synthetic_episode

SCHEMA = default_schema(image_size=8)
N_EPISODES = 4


@dataclass(frozen=True)
class Verdict:
    kind: str  # clear | unnamed | traceback | silent | harmless
    case: str
    message: str


def same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype == object or b.dtype == object:  # bytes of object arrays are pointers: compare values
            return a.shape == b.shape and a.tolist() == b.tolist()
        return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return bool(a == b)


Needle = str | tuple[str, ...]  # a tuple: every string of it must be in the message


def named(message: str, needles: Sequence[Needle]) -> bool:
    """Whether `message` names one of `needles` (a string, or a tuple whose strings it all contains)."""
    return any(all(part in message for part in ((n,) if isinstance(n, str) else n)) for n in needles)


def judge(case: str, run: Callable[[], Any], reference: Any, needles: Sequence[Needle]) -> Verdict:
    try:
        got = run()
    except Exception as e:  # the verdict decides whether it was an expected, clear error
        if not _expected(e):
            return Verdict("traceback", case, f"{type(e).__name__}: {str(e)[:300]}")
        message = error_line(e)  # exactly what `vla` prints after "error: " (always one line)
        if len(message) > 400:  # a traceback or a dump squeezed into one line is not a clear error
            return Verdict("traceback", case, f"overlong: {message[:300]}")
        if needles and not named(message, needles):
            return Verdict("unnamed", case, message)
        return Verdict("clear", case, message)
    return Verdict("harmless" if same(got, reference) else "silent", case, "")


# ---------------------------------------------------------------------------------------- stores
def build_store(path: Path) -> Path:
    with EpisodeStore.create(path, SCHEMA, image_chunk=4, lowdim_chunk=16) as s:
        for seed in range(N_EPISODES):
            s.append_episode(synthetic_episode(SCHEMA, seed, length=9 + seed))
        s.stats()  # the statistics cache exists: damage must not hide behind it
    return path


def read_all(path: Path) -> dict[str, Any]:
    """What readers of a store see: statistics (from the cache), the table, every episode."""
    s = EpisodeStore.open(path)
    stats = {k: v.to_json() for k, v in s.stats().items()}
    t = s.table()
    episodes = []
    for i in range(s.n_episodes):
        ep = s.episode(i)
        episodes.append({"steps": ep.steps, "meta": [ep.task, ep.instruction, ep.success, ep.source, ep.seed]})
    return {"schema": s.schema.to_json(), "n": [s.n_episodes, s.n_steps], "stats": stats,
            "table": {f: getattr(t, f) for f in t.__dataclass_fields__}, "episodes": episodes}


def verify_store(path: Path) -> int:
    """What `vla data verify` checks: every chunk against its checksum and its recorded position."""
    return EpisodeStore.open(path).verify()


def store_files(root: Path) -> list[str]:
    skip = {"writer.lock"}
    return sorted(str(f.relative_to(root)) for f in root.rglob("*") if f.is_file() and f.name not in skip)


def needles_for(rel: str) -> list[str]:
    """What an error about damage to file `rel` must name: its key (or the file itself)."""
    parts = rel.split("/")
    if rel == "stats_cache.npz":
        return []
    if "c" in parts:
        key = "/".join(parts[: parts.index("c")])
    elif parts[-1] == "zarr.json" and len(parts) > 1:
        key = "/".join(parts[:-1])
    else:
        return [rel]
    return [key, key.removeprefix("data/"), rel]


def _json_edit(file: Path, edit: Callable[[dict], None], fix_record: bool = False) -> None:
    meta = json.loads(file.read_text())
    edit(meta)
    if fix_record and "record_crc" in meta.get("attributes", {}):
        attrs = meta["attributes"]
        body = {k: v for k, v in attrs.items() if k != "record_crc"}
        attrs["record_crc"] = zlib.crc32(json.dumps(body, sort_keys=True).encode())
    file.write_text(json.dumps(meta))


STORE_DAMAGE = ("flip", "truncate", "delete", "garbage", "shape", "record", "record_fixed", "meta_edit", "swap")


def _array_layout(root: Path, key: str) -> tuple[Any, ...]:
    """What makes two arrays' chunk files interchangeable: row shape, dtype, chunk shape, codecs."""
    m = json.loads((root / key / "zarr.json").read_text())
    return (tuple(m["shape"][1:]), m["data_type"], tuple(m["chunk_grid"]["configuration"]["chunk_shape"]),
            json.dumps(m.get("codecs"), sort_keys=True))


def swap_chunks(root: Path, rng: random.Random) -> tuple[str, list[Needle]]:
    """Swap two step-data chunk files with different bytes: two of one array, or (half the time, where
    the store has arrays of one layout) the same or another chunk of two arrays of the same layout. Each
    file still passes its own checksum; only the commit record's chunk positions tell (vla data verify
    and every read must name the key and the chunk file)."""
    files = store_files(root)
    chunks: dict[str, list[str]] = {}
    for f in files:
        if f.startswith("data/") and "/c/" in f:
            key, chunk = f.split("/c/", 1)
            chunks.setdefault(key, []).append("c/" + chunk)
    groups: dict[tuple[Any, ...], list[str]] = {}
    for key in sorted(chunks):
        groups.setdefault(_array_layout(root, key), []).append(key)
    pairs_across = [(a, b) for keys in groups.values() for a in keys for b in keys if a < b]
    if pairs_across and rng.random() < 0.5:
        key_a, key_b = rng.choice(pairs_across)
    else:
        key_a = key_b = rng.choice(sorted(k for k, c in chunks.items() if len(c) > 1))
    candidates = [(a, b) for a in sorted(chunks[key_a]) for b in sorted(chunks[key_b])
                  if (key_a, a) < (key_b, b) or (key_a != key_b and a == b)]
    rng.shuffle(candidates)
    for a, b in candidates:
        fa, fb = root / key_a / a, root / key_b / b
        data_a, data_b = fa.read_bytes(), fb.read_bytes()
        if data_a != data_b:  # swapping equal files changes nothing
            fa.write_bytes(data_b)
            fb.write_bytes(data_a)
            ka, kb = key_a.removeprefix("data/"), key_b.removeprefix("data/")
            return f"swap {key_a}/{a} <-> {key_b}/{b}", [(f"key '{ka}'", a), (f"key '{kb}'", b)]
    return f"swap {key_a}: no two chunk files differ (unchanged)", []


def damage_store(root: Path, kind: str, rng: random.Random) -> tuple[str, list[Needle]]:
    """Damage the store at `root` in place; returns (case description, needles)."""
    if kind == "swap":
        return swap_chunks(root, rng)
    files = [f for f in store_files(root) if not (kind == "delete" and f == "stats_cache.npz")]
    if kind in ("flip", "truncate", "delete", "garbage"):
        rel = rng.choice(files)
        f = root / rel
        data = f.read_bytes()
        if kind == "flip":
            at, mask = rng.randrange(len(data)), rng.randrange(1, 256)
            f.write_bytes(data[:at] + bytes([data[at] ^ mask]) + data[at + 1:])
            return f"flip {rel} @{at} ^{mask:#04x}", needles_for(rel)
        if kind == "truncate":
            keep = rng.randrange(len(data))
            f.write_bytes(data[:keep])
            return f"truncate {rel} to {keep}/{len(data)}", needles_for(rel)
        if kind == "delete":
            f.unlink()
            return f"delete {rel}", needles_for(rel)
        n = rng.randrange(0, 2 * len(data) + 2)
        f.write_bytes(rng.randbytes(n))
        return f"garbage {rel} ({n} bytes)", needles_for(rel)
    arrays = [f.rsplit("/", 1)[0] for f in files if f.endswith("/zarr.json")
              and json.loads((root / f).read_text()).get("node_type") == "array"]
    if kind == "shape":
        key = rng.choice(arrays)
        meta = json.loads((root / key / "zarr.json").read_text())
        dim = rng.randrange(len(meta["shape"]))
        delta = rng.choice([-3, -1, 1, 2]) if dim else -rng.randrange(1, meta["shape"][0] + 1)
        also_chunks = rng.random() < 0.5 and dim > 0

        def edit(m: dict) -> None:
            m["shape"][dim] = max(0, m["shape"][dim] + delta)
            if also_chunks:
                grid = m["chunk_grid"]["configuration"]["chunk_shape"]
                grid[dim] = max(1, grid[dim] + delta)
        _json_edit(root / key / "zarr.json", edit)
        return f"shape {key} dim {dim} {delta:+d}{' +chunks' if also_chunks else ''}", [key, key.removeprefix("data/")]
    if kind in ("record", "record_fixed"):
        fields = {"n_episodes": rng.choice([-1, 0, N_EPISODES - 1, N_EPISODES + 1, 10**6]),
                  "n_steps": rng.choice([-5, 0, 1, 39, 41, 10**9]), "schema.state_dim": rng.choice([0, 8, 10]),
                  "schema.action_dim": rng.choice([6, 8]), "format": "other", "version": rng.choice([0, 2]),
                  "schema.cameras": {"agentview": [8, 9]}}
        if kind == "record":  # a field that still parses but differs: only the record's digest tells
            fields.update({"schema.fps": 21.0, "uid": "0" * 32})
        name = rng.choice(sorted(fields))
        value = fields[name]

        def edit_record(m: dict) -> None:
            target = m["attributes"]
            *head, last = name.split(".")
            for h in head:
                target = target[h]
            target[last] = value
        _json_edit(root / "zarr.json", edit_record, fix_record=kind == "record_fixed")
        return f"{kind} {name}={value}", ["zarr.json", name.split(".")[-1], "data/", "meta/", "key '"]
    # meta_edit: a plausible value written through zarr (valid chunk checksums)
    key = rng.choice(["episode_ends", "success", "task", "seed", "n_intervention_steps", "source"])
    arr = zarr.open_array(root / "meta" / key, mode="r+")
    i = rng.randrange(N_EPISODES)
    values = {"episode_ends": rng.choice([0, 5, 15, 40, 41, -1]), "success": not bool(arr[i]), "task": "other",
              "seed": 12345, "n_intervention_steps": rng.choice([-1, 1, 100]), "source": rng.choice(["demo", "x"])}
    old = arr[i]
    arr[i] = values[key]
    return f"meta_edit {key}[{i}] {old!r}->{values[key]!r}", [f"meta/{key}"]


# ------------------------------------------------------------------------------------- episodes
def malformed_episode(rng: random.Random) -> tuple[str, Episode, list[str]]:
    ep = synthetic_episode(SCHEMA, 7, length=6)
    key = rng.choice([*ep.steps, "task", "instruction", "source", "success", "seed", "extra"])
    how = rng.choice(["nan", "inf", "shape", "dtype", "missing", "object", "empty", "huge"])
    if key == "extra":
        ep.steps[rng.choice(["actions", "images/wrist", "stat"])] = ep.steps["state"]
        return "unknown step key", ep, ["'act", "'images/", "'stat"]
    if key in ("task", "instruction", "source", "success", "seed"):
        bad = {"task": ["", 3, None], "instruction": ["", "   ", None], "source": ["demos", "", 1],
               "success": [1, "yes", None], "seed": [1.5, "3", None]}[key]
        value = rng.choice(bad)
        setattr(ep, key, value)
        return f"{key}={value!r}", ep, [f"'{key}'"]
    v = ep.steps[key]
    if how == "missing":
        del ep.steps[key]
    elif how == "shape":
        ep.steps[key] = v[:-1] if rng.random() < 0.5 else np.concatenate([v, v], axis=-1) if v.ndim > 1 else v[:, None]
    elif how == "dtype":  # a dtype the key does not accept (float16 for state would be a valid input)
        invalid = {"f": [np.complex64, np.str_, np.bool_], "i": [np.float16, np.complex64, np.str_, np.bool_],
                   "b": [np.int64, np.float32, np.str_], "u": [np.float32, np.int64, np.int8]}[v.dtype.kind]
        ep.steps[key] = v.astype(rng.choice(invalid))
    elif how == "object":
        ep.steps[key] = v.astype(object)
    elif how == "empty":
        ep.steps = {k: x[:0] for k, x in ep.steps.items()}
        return "empty episode", ep, ["'action'"]
    elif how == "huge" and v.dtype.kind in "iu":
        ep.steps[key] = v.astype(np.int64) + 2**40
    elif v.dtype.kind == "f":
        bad = np.array(np.nan if how == "nan" else np.inf, v.dtype)
        flat = v.reshape(len(v), -1).copy()
        flat[rng.randrange(len(v)), rng.randrange(flat.shape[1])] = bad
        ep.steps[key] = flat.reshape(v.shape)
    else:
        ep.steps[key] = v.astype(np.float64) + 0.5  # fractional values where ints / bools / bytes are due
    # A shorter `action` (the key that sets the length) makes the other keys the wrong length.
    return f"{key} {how}", ep, [f"'{key}'"] + (["time first"] if how == "shape" else [])


def append_case(store: EpisodeStore, ep: Episode) -> Callable[[], Any]:
    def run() -> Any:
        before = store.n_episodes
        store.append_episode(ep)
        return {"appended": store.n_episodes - before}
    return run


# -------------------------------------------------------------------------------------- configs
# Values no field of the kinds drawn accepts (YAML syntax errors, unsafe tags, text or lists where
# numbers, booleans or sections are due); "{}", "null" or "-1" can be legitimate and are left out.
BAD_VALUES = ["[1", "{a: 1", "'unterminated", "not_a_number", "\t:", "- - x", "!!python/object:os.system",
              "7: 8: 9", "[[1, 2], 3", "0x"]


def bad_override(rng: random.Random, fields: Sequence[str]) -> tuple[str, list[str]]:
    kind = rng.choice(["unknown", "value", "form", "nested"])
    if kind == "unknown":
        name = rng.choice(fields)
        typo = name[:-1] + rng.choice("xyz") if len(name) > 2 else name + "q"
        return f"{typo}=1", [typo]
    if kind == "form":
        return rng.choice(["episodes", "=3", "a.b", " "]), ["override", "key"]
    if kind == "nested":
        return f"{rng.choice(fields)}.inner.deep=3", ["inner", "override"]
    return f"{rng.choice(fields)}={rng.choice(BAD_VALUES)}", ["override", "key '", "line "]


def bad_preset(rng: random.Random, folder: Path, fields: Sequence[str]) -> tuple[Path, list[str]]:
    texts = [f"{rng.choice(fields)}: [1, 2\nother: 3\n", "- a\n- b\n", "just a string", f"{rng.choice(fields)}: {{a: 1",
             "key: value\n  bad indent: 1\n", f"{rng.choice(fields)}x: 1\n", "\x00\x01 binary", ": :\n",
             f"{rng.choice(fields)}: !!python/object/apply:os.system [echo]\n"]
    path = folder / f"preset_{rng.randrange(10**9)}.yaml"
    path.write_text(rng.choice(texts))
    return path, [path.name]


# ---------------------------------------------------------------------------------- checkpoints
# The first five break a file's bytes (its sha256 in config.json then tells); the others write values a
# checkpoint must not hold into intact files and reseal the manifest, so that only the value is wrong.
CHECKPOINT_DAMAGE = ("flip", "truncate", "delete", "garbage", "config_field", "nan_weight", "nan_stats",
                     "huge_config", "nan_embedding")
NON_FINITE = (float("nan"), float("inf"), float("-inf"))


class NotApplicable(Exception):
    """The damage needs a file this artefact does not have (e.g. instructions.safetensors)."""


def reseal(folder: Path) -> None:
    """config.json's manifest made to match the folder's files again, as a checkpoint written with those
    contents would have it (tests/vla/policy/conftest.py)."""
    from tests.vla.policy.conftest import reseal as reseal_checkpoint

    reseal_checkpoint(folder)


def _rewrite_tensor(path: Path, rng: random.Random, pick: Callable[[list[str]], str] | None = None
                    ) -> tuple[str, str]:
    """One element of one floating-point tensor of a safetensors file set to NaN / inf (its metadata
    kept); returns (tensor name, what was written where)."""
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file

    with safe_open(str(path), "np") as f:
        meta = f.metadata()
    tensors = load_file(str(path))
    floats = sorted(k for k, t in tensors.items() if t.dtype.kind == "f" and t.size)
    name = pick(floats) if pick is not None else rng.choice(floats)
    values = tensors[name].copy()
    at, value = rng.randrange(values.size), rng.choice(NON_FINITE)
    values.flat[at] = value
    tensors[name] = values
    save_file(tensors, str(path), metadata=meta)
    return name, f"[{at}]={value}"


def _size_keys() -> dict[str, int]:
    from vla.policy.config import MAX_IMAGE_SIDE, MAX_VISION_CHANNELS, OPTIONAL_SIZE_LIMITS, SIZE_LIMITS

    return {**SIZE_LIMITS, **OPTIONAL_SIZE_LIMITS, "image_size": MAX_IMAGE_SIDE,
            "vision_channels": MAX_VISION_CHANNELS}


def damage_checkpoint_values(folder: Path, kind: str, rng: random.Random) -> tuple[str, list[Needle]]:
    """A value no checkpoint may hold, written into an intact file, the manifest resealed to match."""
    if kind == "nan_weight":
        name = rng.choice([n for n in ("model.safetensors", "ema.safetensors") if (folder / n).is_file()])
        tensor, where = _rewrite_tensor(folder / name, rng)
        reseal(folder)
        return f"nan_weight {name} {tensor}{where}", [(f"{name}: tensor '{tensor}'", "non-finite")]
    if kind == "nan_embedding":
        if not (folder / "instructions.safetensors").is_file():
            raise NotApplicable(f"{folder} has no instructions.safetensors")
        tensor, where = _rewrite_tensor(folder / "instructions.safetensors", rng, lambda names: "embeddings")
        reseal(folder)
        return f"nan_embedding {tensor}{where}", [("instructions.safetensors", "'embeddings'", "non-finite")]
    if kind == "nan_stats":
        stats = json.loads((folder / "stats.json").read_text())
        key = rng.choice(sorted(stats))
        field_name = rng.choice(["mean", "std", "min", "max", "q01", "q99"])
        values = stats[key][field_name]
        at, value = rng.randrange(len(values)), rng.choice(NON_FINITE)
        values[at] = value
        (folder / "stats.json").write_text(json.dumps(stats))  # NaN / Infinity: what Python's json writes
        reseal(folder)
        return (f"nan_stats {key}.{field_name}[{at}]={value}",
                [("stats.json", f"statistic '{key}.{field_name}'", "non-finite")])
    if kind == "huge_config":
        meta = json.loads((folder / "config.json").read_text())
        limits = _size_keys()
        key = rng.choice(sorted(limits))
        value = rng.choice([limits[key] + 1, 10**9, 2**31, 10**12, 1e9, 10**18])
        if key in ("image_size", "vision_channels"):
            sizes = list(meta["policy"][key])
            sizes[rng.randrange(len(sizes))] = value
            value = sizes
        meta["policy"][key] = value
        (folder / "config.json").write_text(json.dumps(meta))
        reseal(folder)
        return f"huge_config {key}={value!r}", [("config.json", key)]
    raise ValueError(f"unknown checkpoint damage '{kind}'")


def damage_checkpoint(folder: Path, kind: str, rng: random.Random) -> tuple[str, list[Needle]]:
    if kind in CHECKPOINT_DAMAGE[5:]:
        return damage_checkpoint_values(folder, kind, rng)
    files = sorted(f.name for f in folder.iterdir() if f.is_file())
    name = rng.choice(files)
    f = folder / name
    data = f.read_bytes()
    if kind == "flip":
        at, mask = rng.randrange(len(data)), rng.randrange(1, 256)
        f.write_bytes(data[:at] + bytes([data[at] ^ mask]) + data[at + 1:])
        return f"flip {name} @{at} ^{mask:#04x}", [name]
    if kind == "truncate":
        keep = rng.randrange(len(data))
        f.write_bytes(data[:keep])
        return f"truncate {name} to {keep}/{len(data)}", [name]
    if kind == "delete":
        f.unlink()
        return f"delete {name}", [name, "config.json"]
    if kind == "garbage":
        f.write_bytes(rng.randbytes(rng.randrange(0, 64)))
        return f"garbage {name}", [name]
    meta = json.loads((folder / "config.json").read_text())
    field_name = rng.choice(sorted(meta["policy"]))
    meta["policy"][field_name] = rng.choice([None, -1, "x", [1], 10**6, 0.5])
    (folder / "config.json").write_text(json.dumps(meta))
    return f"config {field_name}={meta['policy'][field_name]!r}", ["config.json"]


def load_checkpoint_all(folder: Path) -> dict[str, Any]:
    from vla.policy.checkpoint import load_model
    from vla.policy.language import InstructionEncoder

    out: dict[str, Any] = {}
    for use_ema in (True, False):
        # An encoder of its own (never loaded): its cache then holds exactly this checkpoint's table.
        model, stats = load_model(folder, use_ema=use_ema, language=InstructionEncoder(model_dir="/nonexistent"))
        out[f"ema={use_ema}"] = {k: v.numpy() for k, v in model.state_dict().items()}
        out[f"stats{use_ema}"] = {k: v.to_json() for k, v in stats.items()}
        out[f"instr{use_ema}"] = {k: np.asarray(v) for k, v in model.language.cached().items()}
    return out


def fresh_copy(src: Path, dst: Path) -> Path:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    return dst


# ---------------------------------------------------------------------------------- ONNX exports
EXPORT_DAMAGE = ("truncate", "garbage", "runtime_json", "nan_scale")


def damage_export(folder: Path, kind: str, rng: random.Random) -> tuple[str, list[Needle]]:
    """Damage an ONNX export folder (vla export): a truncated or garbage graph (or its external weights),
    a broken runtime.json, a NaN / inf action scale or centre in it."""
    if kind in ("truncate", "garbage"):
        name = rng.choice(sorted(f.name for f in folder.iterdir() if ".onnx" in f.name))
        f = folder / name
        data = f.read_bytes()
        graph = name.removesuffix(".data")  # external weights are read through their graph
        if kind == "truncate":
            keep = rng.randrange(len(data))
            f.write_bytes(data[:keep])
            return f"truncate {name} to {keep}/{len(data)}", [graph]
        n = rng.randrange(0, 2 * len(data) + 2)
        f.write_bytes(rng.randbytes(n))
        return f"garbage {name} ({n} bytes)", [graph]
    path = folder / "runtime.json"
    text = path.read_text()
    meta = json.loads(text)
    if kind == "nan_scale":
        key = rng.choice(["action_scale", "action_center"])
        at, value = rng.randrange(len(meta[key])), rng.choice(NON_FINITE)
        meta[key][at] = value
        path.write_text(json.dumps(meta))
        return f"runtime.json {key}[{at}]={value}", [("runtime.json", f"'{key}'")]
    how = rng.choice(["cut", "not_object", "drop", "value"])
    if how == "cut":
        keep = rng.randrange(len(text))
        path.write_text(text[:keep])
        return f"runtime.json cut to {keep}/{len(text)}", ["runtime.json"]
    if how == "not_object":
        other = rng.choice(["[]", "null", '"runtime"', "3", "[" + text + "]"])
        path.write_text(other)
        return f"runtime.json = {other[:20]}", ["runtime.json"]
    key = rng.choice(sorted(meta))
    if how == "drop":
        del meta[key]
        path.write_text(json.dumps(meta))
        return f"runtime.json without '{key}'", ["runtime.json"]
    value = rng.choice([None, "x", [], {}, -1, 10**9, [1.0]])
    meta[key] = value
    path.write_text(json.dumps(meta))
    return f"runtime.json {key}={value!r}", ["runtime.json"]


def check_export(folder: Path) -> Any:
    """What the `vla eval` parent runs on a policy folder before any worker starts (sim.evaluate)."""
    from sim.evaluate import check_policy_spec

    return check_policy_spec(str(folder))


# ------------------------------------------------------------------------------- refine inputs
REFINE_MISMATCH = ("action", "state", "camera")


def mismatched_demos(folder: Path, policy: Any, rng: random.Random) -> tuple[str, Path, list[Needle]]:
    """An EpisodeStore of demos that do not fit `policy` (a PolicyConfig): another action size, another
    state size, or without one of its cameras; `vla refine` must refuse it before any work, naming the
    store, the key and both sizes."""
    from vla.data.schema import StoreSchema

    how = rng.choice(REFINE_MISMATCH)
    action_dim, state_dim, cameras = policy.action_dim, policy.state_dim, list(policy.cameras)
    if rng.random() < 0.3:
        cameras.append("robot0_eye_in_hand")  # an extra camera the policy does not read is fine
    if how == "action":
        action_dim = rng.choice([n for n in range(1, 15) if n != policy.action_dim])
        needles: list[Needle] = [("demos", f"key 'action' has size {action_dim}", f"action_dim {policy.action_dim}")]
    elif how == "state":
        state_dim = rng.choice([n for n in range(1, 24) if n != policy.state_dim])
        needles = [("demos", f"key 'state' has size {state_dim}", f"state_dim {policy.state_dim}")]
    else:
        missing = rng.choice(policy.cameras) if policy.cameras else None
        if missing is None:
            raise NotApplicable("the policy reads no camera")
        cameras = [c for c in cameras if c != missing] + (["wrist"] if rng.random() < 0.5 else [])
        needles = [("demos", f"no key 'images/{missing}'")]
    schema = StoreSchema(cameras={c: (8, 8) for c in cameras}, state_dim=state_dim, action_dim=action_dim, fps=20.0)
    path = folder / f"demos_{how}_{action_dim}_{state_dim}_{'_'.join(cameras) or 'none'}.zarr"
    shutil.rmtree(path, ignore_errors=True)
    with EpisodeStore.create(path, schema) as store:
        for seed in range(2):
            store.append_episode(synthetic_episode(schema, seed, length=6))
    case = f"refine demos action_dim={action_dim} state_dim={state_dim} cameras={cameras}"
    return case, path, needles


def refine_check(ckpt: Path, demos: Path, out_dir: Path) -> Callable[[], Any]:
    """`vla refine`'s check of its inputs (RefineRun.check_inputs: before any evaluation, collection or copy)."""
    def run() -> Any:
        from vla.config import load_config
        from vla.refine.config import RefineConfig
        from vla.refine.loop import RefineRun

        cfg = load_config(RefineConfig, "refine", "debug", [],
                          values={"method": "sft", "ckpt": str(ckpt), "demos": str(demos), "out_dir": str(out_dir)})
        RefineRun(cfg, progress=False).check_inputs()
        return {"out_dir_created": out_dir.exists()}
    return run
