"""Policy checkpoint = one folder, safetensors and JSON only (nothing is unpickled):

    config.json              {"format": "vla-policy", "version": 1, "policy": PolicyConfig}
    model.safetensors        weights + normalisation buffers
    ema.safetensors          EMA weights (optional; preferred by `load_model` when present)
    stats.json               the normalisation statistics the model was built from
    instructions.safetensors cached instruction embeddings (names in the metadata), so inference
                             on known instructions does not need the language model; the metadata's
                             `groups` are the training phrasings grouped by meaning (the model's
                             `instruction_groups`, what `instruction_vocab=checkpoint` grounds on)
    optimizer.safetensors    (training only) optimizer tensors; `train_state.json` the rest

A folder is written under a temporary name and renamed, so a crash never leaves a half-written
checkpoint under the final name.

Integrity. config.json is written last and records every other file's size and sha256 (`files`)
and a sha256 of its own content (`sha256`); loading checks them, so a truncated, altered or
deleted file is a `CheckpointError` naming it, never plausible wrong weights. There is no
fallback between weight files: every weight file present (and every one the manifest lists) must
be intact, whichever one is loaded, so a damaged `model.safetensors` cannot hide behind
`ema.safetensors` or the reverse. Checkpoints written before the manifest still load; their
weight files are checked structurally (safetensors header and length).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vla.data.stats import Stats
from vla.policy.config import PolicyConfig
from vla.policy.language import EMBED_DIM, InstructionEncoder
from vla.policy.model import VLAModel

FORMAT, VERSION = "vla-policy", 1


class CheckpointError(RuntimeError):
    """A checkpoint folder is missing, incomplete, corrupt or does not fit the model."""


def _save_tensors(tensors: dict[str, torch.Tensor], path: Path, metadata: dict[str, str] | None = None) -> None:
    from safetensors.torch import save_file

    save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(path), metadata=metadata)


def load_tensors(path: Path) -> dict[str, torch.Tensor]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    verify_file(path)
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as e:
        raise CheckpointError(f"checkpoint file is corrupt or not safetensors: {path} ({e})") from e


def _read_json(path: Path) -> Any:
    if path.name != "config.json":
        verify_file(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint file missing: {path}")
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"checkpoint file is corrupt (invalid JSON): {path} ({e})") from e


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _self_digest(meta: dict[str, Any]) -> str:
    body = {k: v for k, v in meta.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _manifest(folder: Path) -> dict[str, Any] | None:
    """config.json's `files` record of a vla-policy folder (None for other folders / older ones)."""
    try:
        meta = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or not isinstance(meta.get("files"), dict):
        return None
    return meta["files"]


def verify_file(path: Path) -> None:
    """Check a checkpoint file against the size and sha256 config.json records for it."""
    record = (_manifest(path.parent) or {}).get(path.name)
    if record is None:
        return
    if not path.is_file():
        raise CheckpointError(f"checkpoint file missing: {path} (config.json lists it)")
    size = path.stat().st_size
    if size != record.get("bytes"):
        raise CheckpointError(f"checkpoint file is corrupt: {path} has {size} bytes, config.json records "
                              f"{record.get('bytes')} (truncated or replaced)")
    if _sha256(path) != record.get("sha256"):
        raise CheckpointError(f"checkpoint file is corrupt: {path} does not match the sha256 config.json records "
                              "(the file was altered)")


def check_safetensors_layout(path: Path) -> None:
    """Header and length of a safetensors file, without loading it (for weight files that are not
    loaded now but must not be damaged either, in checkpoints without a manifest)."""
    try:
        with open(path, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(n)) if 0 < n < 100_000_000 else None
        if not isinstance(header, dict):
            raise ValueError("no safetensors header")
        end = max((int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"), default=0)
        if path.stat().st_size != 8 + n + end:
            raise ValueError(f"{path.stat().st_size} bytes, the header describes {8 + n + end}")
    except (OSError, ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as e:
        raise CheckpointError(f"checkpoint file is corrupt or not safetensors: {path} ({e})") from None


STATS_FIELDS = ("mean", "std", "min", "max", "q01", "q99")


def stats_from_json(d: dict[str, Any]) -> dict[str, Stats]:
    return {k: Stats(**{f: np.asarray(v[f], np.float64) for f in STATS_FIELDS}, count=int(v["count"]))
            for k, v in d.items()}


def non_finite_stat(stats: dict[str, Stats]) -> str | None:
    """The first statistic ("state.std") holding a NaN or inf, or None: normalising by one turns every
    action the policy outputs into NaN, so such statistics are neither written nor loaded."""
    for key, s in stats.items():
        for f in STATS_FIELDS:
            if not np.isfinite(np.asarray(getattr(s, f), np.float64)).all():
                return f"{key}.{f}"
    return None


def non_finite_tensor(tensors: dict[str, torch.Tensor]) -> str | None:
    """The first floating-point tensor holding a NaN or inf, or None."""
    for name, t in tensors.items():
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            return name
    return None


def save_checkpoint(path: str | Path, model: VLAModel, stats: dict[str, Stats] | None = None,
                    ema_state: dict[str, torch.Tensor] | None = None,
                    optimizer_tensors: dict[str, torch.Tensor] | None = None,
                    train_state: dict[str, Any] | None = None) -> Path:
    final = Path(path)
    bad = non_finite_stat(stats) if stats is not None else None
    if bad is not None:
        # a checkpoint that cannot be loaded must not be written (a refinement would copy it on)
        raise ValueError(f"refusing to write checkpoint {final}: statistic '{bad}' has non-finite values "
                         "(NaN or inf)")
    tmp = final.with_name(f".{final.name}.tmp{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    _save_tensors(dict(model.state_dict()), tmp / "model.safetensors")
    if ema_state is not None:
        _save_tensors(ema_state, tmp / "ema.safetensors")
    if stats is not None:
        (tmp / "stats.json").write_text(json.dumps({k: s.to_json() for k, s in stats.items()}))
    write_instruction_table(tmp / "instructions.safetensors", model.language.cached(), model.instruction_groups)
    if optimizer_tensors is not None:
        _save_tensors(optimizer_tensors, tmp / "optimizer.safetensors")
    if train_state is not None:
        (tmp / "train_state.json").write_text(json.dumps(train_state, indent=2))
    # config.json last: it records every other file (size, sha256) and a digest of itself.
    files = {f.name: {"bytes": f.stat().st_size, "sha256": _sha256(f)} for f in sorted(tmp.iterdir())}
    meta: dict[str, Any] = {"format": FORMAT, "version": VERSION, "policy": model.cfg.to_dict(), "files": files}
    meta["sha256"] = _self_digest(meta)
    (tmp / "config.json").write_text(json.dumps(meta, indent=2))
    if final.exists():
        old = final.with_name(f".{final.name}.old{os.getpid()}")
        final.rename(old)
        tmp.rename(final)
        shutil.rmtree(old)
    else:
        tmp.rename(final)
    return final


def load_config(path: str | Path) -> PolicyConfig:
    folder = Path(path)
    if not folder.is_dir():
        raise CheckpointError(f"checkpoint folder not found: {folder}")
    meta = _read_json(folder / "config.json")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or "policy" not in meta:
        raise CheckpointError(f"{folder / 'config.json'} is not a {FORMAT} config")
    if "sha256" in meta and meta["sha256"] != _self_digest(meta):
        raise CheckpointError(f"checkpoint file is corrupt: {folder / 'config.json'} does not match its own sha256 "
                              "(the file was altered)")
    if int(meta.get("version", -1)) > VERSION:
        raise CheckpointError(f"{folder} has format version {meta['version']}, this code reads <= {VERSION}")
    try:
        return PolicyConfig.from_dict(meta["policy"])
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{folder / 'config.json'}: invalid policy config ({e})") from e


def write_instruction_table(path: Path, table: dict[str, np.ndarray], groups: list[tuple[str, ...]]) -> None:
    """instructions.safetensors: the cached embeddings, with the phrasing groups in the metadata; nothing
    is written when there is neither."""
    if not table and not groups:
        return
    from safetensors.numpy import save_file

    names = sorted(table)
    emb = np.stack([table[n] for n in names]).astype(np.float32) if names else np.zeros((0, EMBED_DIM), np.float32)
    meta = {"instructions": json.dumps(names)}
    if groups:
        meta["groups"] = json.dumps([list(g) for g in groups])
    save_file({"embeddings": emb}, str(path), metadata=meta)


def load_instructions(folder: str | Path) -> tuple[dict[str, np.ndarray], list[tuple[str, ...]]]:
    """instructions.safetensors of a checkpoint or ONNX export, checked and read once: the cached
    embeddings by instruction, and the phrasing groups ([] for a folder saved before they were, or
    without instructions)."""
    folder = Path(folder)
    path = folder / "instructions.safetensors"
    if not _expected(folder, path.name):
        return {}, []
    from safetensors import safe_open

    tensors = load_tensors(path)
    try:
        emb = tensors["embeddings"].numpy()
        with safe_open(str(path), "np") as f:
            meta = f.metadata() or {}
        names = json.loads(meta.get("instructions", "[]"))
        groups = json.loads(meta.get("groups", "[]"))
    except (KeyError, OSError, ValueError, TypeError) as e:
        raise CheckpointError(f"checkpoint file is corrupt: {path} ({e!r})") from None
    if emb.shape != (len(names), EMBED_DIM):
        raise CheckpointError(f"{path}: {emb.shape[0]} embeddings for {len(names)} instructions")
    if not np.isfinite(emb).all():
        raise CheckpointError(f"{path}: tensor 'embeddings' has non-finite values (NaN or inf)")
    if not (isinstance(groups, list) and all(isinstance(g, list) and g and all(isinstance(p, str) for p in g)
                                             for g in groups)):
        raise CheckpointError(f"checkpoint file is corrupt: {path}: its 'groups' metadata is not a list of lists "
                              "of phrasings")
    return dict(zip(names, emb, strict=True)), [tuple(g) for g in groups]


def load_instruction_groups(folder: str | Path) -> list[tuple[str, ...]]:
    """The phrasing groups a checkpoint or ONNX export carries (`load_instructions`)."""
    return load_instructions(folder)[1]


def load_instruction_table(folder: Path) -> dict[str, np.ndarray]:
    """The cached instruction embeddings a checkpoint or ONNX export carries (`load_instructions`)."""
    return load_instructions(folder)[0]


def _fit(own: dict[str, torch.Tensor], tensors: dict[str, torch.Tensor]
         ) -> tuple[list[str], list[str], list[tuple[str, tuple[int, ...], tuple[int, ...]]]]:
    """How `tensors` fit a model's state dict `own`: (names missing from them, names the model lacks,
    (name, their shape, the model's) of the shared names whose shapes differ)."""
    missing = [k for k in own if k not in tensors]
    unexpected = [k for k in tensors if k not in own]
    wrong = [(k, tuple(tensors[k].shape), tuple(v.shape)) for k, v in own.items()
             if k in tensors and tensors[k].shape != v.shape]
    return missing, unexpected, wrong


def load_state_into(model: torch.nn.Module, tensors: dict[str, torch.Tensor], source: Path) -> None:
    """strict load with an error that names the first missing/unexpected/mismatched or non-finite tensor."""
    missing, unexpected, wrong = _fit(model.state_dict(), tensors)
    if missing:
        raise CheckpointError(f"{source}: tensor '{missing[0]}' missing ({len(missing)} missing in all); "
                              "the file does not fit config.json")
    if unexpected:
        raise CheckpointError(f"{source}: unexpected tensor '{unexpected[0]}' ({len(unexpected)} in all); "
                              "the file does not fit config.json")
    if wrong:
        k, got, want = wrong[0]
        raise CheckpointError(f"{source}: tensor '{k}' has shape {got}, the model from config.json needs "
                              f"{want}")
    _check_finite(tensors, source)
    model.load_state_dict(tensors, strict=True)


def _check_finite(tensors: dict[str, torch.Tensor], source: Path) -> None:
    # An intact file (its sha256 matches) may still hold NaN weights, e.g. saved after a diverged
    # update; loaded, every chunk would be NaN, found only in a worker far from the cause.
    bad = non_finite_tensor(tensors)
    if bad is not None:
        raise CheckpointError(f"{source}: tensor '{bad}' has non-finite values (NaN or inf)")


def load_partial_weights(model: torch.nn.Module, path: str | Path) -> int:
    """Initialise the tensors named in a safetensors file (e.g. `vision.<camera>.*` from a perception
    pretraining) and leave the rest as they are; every tensor in the file must exist in the model
    with the same shape. Returns how many were loaded. `train.init_weights` uses it."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"init_weights file not found: {path} (a .safetensors file)")
    tensors = load_tensors(path)
    _, unexpected, wrong = _fit(model.state_dict(), tensors)  # missing ones keep their values
    if unexpected:
        raise CheckpointError(f"{path}: tensor '{unexpected[0]}' is not in the model ({len(unexpected)} such in all)")
    if wrong:
        k, got, want = wrong[0]
        raise CheckpointError(f"{path}: tensor '{k}' has shape {got}, the model needs {want}")
    if not tensors:
        raise CheckpointError(f"{path}: holds no tensors")
    _check_finite(tensors, path)
    model.load_state_dict(tensors, strict=False)
    return len(tensors)


def weights_file(folder: Path, use_ema: bool = True) -> Path:
    """The weight file `load_model` loads, after checking that no weight file is damaged or
    missing: EMA weights when the checkpoint has them and `use_ema`, else model weights."""
    listed = _manifest(folder) or {}
    for name in ("model.safetensors", "ema.safetensors"):
        path = folder / name
        if name in listed:
            verify_file(path)  # raises for a missing, truncated or altered file
        elif name == "model.safetensors" and not path.is_file():
            raise CheckpointError(f"checkpoint file missing: {path}")
        elif path.is_file():
            check_safetensors_layout(path)
    ema = folder / "ema.safetensors"
    return ema if use_ema and ema.is_file() else folder / "model.safetensors"


def validate_checkpoint(path: str | Path, use_ema: bool = True) -> PolicyConfig:
    """Everything `load_model` checks, by loading it once; for parents that hand the folder to
    worker processes (`vla eval`, `vla refine`), so a bad checkpoint fails before any worker."""
    model, _ = load_model(path, use_ema=use_ema)
    cfg = model.cfg
    del model
    return cfg


def load_model(path: str | Path, use_ema: bool = True, device: str | torch.device = "cpu",
               language: InstructionEncoder | None = None) -> tuple[VLAModel, dict[str, Stats]]:
    """Rebuild the model from a checkpoint folder (EMA weights when present and `use_ema`)."""
    folder = Path(path)
    cfg = load_config(folder)
    weights = weights_file(folder, use_ema)
    model = VLAModel(cfg, language=language)
    load_state_into(model, load_tensors(weights), weights)
    stats: dict[str, Stats] = {}
    if _expected(folder, "stats.json"):
        try:
            stats = stats_from_json(_read_json(folder / "stats.json"))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CheckpointError(f"checkpoint file is corrupt: {folder / 'stats.json'} ({e!r})") from None
        bad = non_finite_stat(stats)
        if bad is not None:
            raise CheckpointError(f"{folder / 'stats.json'}: statistic '{bad}' has non-finite values (NaN or inf)")
    table, model.instruction_groups = load_instructions(folder)
    model.language.preload(table)
    return model.to(device).eval(), stats


def _expected(folder: Path, name: str) -> bool:
    """An optional file is read when present or listed (a listed but missing file is an error)."""
    return (folder / name).exists() or name in (_manifest(folder) or {})
