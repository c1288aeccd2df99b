"""Policy checkpoint = one folder, safetensors and JSON only (nothing is unpickled):

    config.json              {"format": "vla-policy", "version": 1, "policy": PolicyConfig}
    model.safetensors        weights + normalisation buffers
    ema.safetensors          EMA weights (optional; preferred by `load_model` when present)
    stats.json               the normalisation statistics the model was built from
    instructions.safetensors cached instruction embeddings (names in the metadata), so inference
                             on known instructions does not need the language model
    optimizer.safetensors    (training only) optimizer tensors; `train_state.json` the rest

A folder is written under a temporary name and renamed, so a crash never leaves a half-written
checkpoint under the final name.
"""

from __future__ import annotations

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

    if not path.is_file():
        raise CheckpointError(f"checkpoint file missing: {path}")
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as e:
        raise CheckpointError(f"checkpoint file is corrupt or not safetensors: {path} ({e})") from e


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise CheckpointError(f"checkpoint file missing: {path}")
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"checkpoint file is corrupt (invalid JSON): {path} ({e})") from e


def stats_from_json(d: dict[str, Any]) -> dict[str, Stats]:
    fields = ("mean", "std", "min", "max", "q01", "q99")
    return {k: Stats(**{f: np.asarray(v[f], np.float64) for f in fields}, count=int(v["count"]))
            for k, v in d.items()}


def save_checkpoint(path: str | Path, model: VLAModel, stats: dict[str, Stats] | None = None,
                    ema_state: dict[str, torch.Tensor] | None = None,
                    optimizer_tensors: dict[str, torch.Tensor] | None = None,
                    train_state: dict[str, Any] | None = None) -> Path:
    final = Path(path)
    tmp = final.with_name(f".{final.name}.tmp{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    (tmp / "config.json").write_text(json.dumps({"format": FORMAT, "version": VERSION,
                                                 "policy": model.cfg.to_dict()}, indent=2))
    _save_tensors(dict(model.state_dict()), tmp / "model.safetensors")
    if ema_state is not None:
        _save_tensors(ema_state, tmp / "ema.safetensors")
    if stats is not None:
        (tmp / "stats.json").write_text(json.dumps({k: s.to_json() for k, s in stats.items()}))
    table = model.language.cached()
    if table:
        names = sorted(table)
        _save_tensors({"embeddings": torch.from_numpy(np.stack([table[n] for n in names]))},
                      tmp / "instructions.safetensors", metadata={"instructions": json.dumps(names)})
    if optimizer_tensors is not None:
        _save_tensors(optimizer_tensors, tmp / "optimizer.safetensors")
    if train_state is not None:
        (tmp / "train_state.json").write_text(json.dumps(train_state, indent=2))
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
    if int(meta.get("version", -1)) > VERSION:
        raise CheckpointError(f"{folder} has format version {meta['version']}, this code reads <= {VERSION}")
    try:
        return PolicyConfig.from_dict(meta["policy"])
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{folder / 'config.json'}: invalid policy config ({e})") from e


def load_instruction_table(folder: Path) -> dict[str, np.ndarray]:
    path = folder / "instructions.safetensors"
    if not path.exists():
        return {}
    from safetensors import safe_open

    emb = load_tensors(path)["embeddings"].numpy()
    with safe_open(str(path), "np") as f:
        names = json.loads((f.metadata() or {}).get("instructions", "[]"))
    if emb.shape != (len(names), EMBED_DIM):
        raise CheckpointError(f"{path}: {emb.shape[0]} embeddings for {len(names)} instructions")
    return dict(zip(names, emb, strict=True))


def load_state_into(model: torch.nn.Module, tensors: dict[str, torch.Tensor], source: Path) -> None:
    """strict load with an error that names the first missing/unexpected/mismatched tensor."""
    own = model.state_dict()
    missing = [k for k in own if k not in tensors]
    unexpected = [k for k in tensors if k not in own]
    wrong = [(k, tuple(tensors[k].shape), tuple(v.shape)) for k, v in own.items()
             if k in tensors and tensors[k].shape != v.shape]
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
    model.load_state_dict(tensors, strict=True)


def load_model(path: str | Path, use_ema: bool = True, device: str | torch.device = "cpu",
               language: InstructionEncoder | None = None) -> tuple[VLAModel, dict[str, Stats]]:
    """Rebuild the model from a checkpoint folder (EMA weights when present and `use_ema`)."""
    folder = Path(path)
    cfg = load_config(folder)
    model = VLAModel(cfg, language=language)
    weights = folder / "ema.safetensors" if use_ema and (folder / "ema.safetensors").exists() \
        else folder / "model.safetensors"
    load_state_into(model, load_tensors(weights), weights)
    stats = stats_from_json(_read_json(folder / "stats.json")) if (folder / "stats.json").exists() else {}
    model.language.preload(load_instruction_table(folder))
    return model.to(device).eval(), stats
