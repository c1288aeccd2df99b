"""World-model checkpoint = one folder, safetensors and JSON only (nothing is unpickled):

    config.json            {"format": "vla-worldmodel", "version": 1, "model": ..., "train": ..., "meta": ...}
    model.safetensors      weights and the state normalisation
    optimizer.safetensors  (training) AdamW moments; train_state.json the step and the param groups

Written under a temporary name and renamed, as the policy's checkpoints are. Why not the policy's
checkpoint code (vla/policy/checkpoint.py): that one is a deployment artefact - normalisation
statistics, EMA weights, the instruction table, a manifest of digests that the robot path verifies
before loading - while a world model is a training-time tool read back only by this package, with its
own config format and an optional optimiser state (a copied pretrained model has none).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Any

import torch

from vla.policy.checkpoint import CheckpointError, _save_tensors, load_tensors
from worldmodel.config import WMJobConfig, WMTrainConfig, WorldModelConfig
from worldmodel.model import WorldModel

FORMAT, VERSION = "vla-worldmodel", 1


def _optimizer_tensors(opt: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    sd = opt.state_dict()
    tensors, scalars = {}, {}
    for pid, st in sd["state"].items():
        for k, v in st.items():
            if torch.is_tensor(v):
                tensors[f"{pid}.{k}"] = v
            else:
                scalars[f"{pid}.{k}"] = v
    return tensors, {"param_groups": sd["param_groups"], "scalars": scalars}


def _optimizer_state(tensors: dict[str, torch.Tensor], extra: dict[str, Any]) -> dict[str, Any]:
    state: dict[int, dict[str, Any]] = {}
    for key, v in tensors.items():
        pid, k = key.split(".", 1)
        state.setdefault(int(pid), {})[k] = v
    for key, v in extra["scalars"].items():
        pid, k = key.split(".", 1)
        state.setdefault(int(pid), {})[k] = v
    return {"state": state, "param_groups": extra["param_groups"]}


def save_checkpoint(path: str | Path, model: WorldModel, job: WMJobConfig, meta: dict[str, Any],
                    opt: torch.optim.Optimizer | None = None, train_state: dict[str, Any] | None = None,
                    keep: int = 0) -> Path:
    final = Path(path)
    tmp = final.with_name(f".{final.name}.tmp{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    (tmp / "config.json").write_text(json.dumps({"format": FORMAT, "version": VERSION,
                                                 "model": dataclasses.asdict(job.model),
                                                 "train": dataclasses.asdict(job.train), "meta": meta}, indent=1))
    _save_tensors(dict(model.state_dict()), tmp / "model.safetensors")
    if opt is not None:
        tensors, extra = _optimizer_tensors(opt)
        _save_tensors(tensors, tmp / "optimizer.safetensors")
        (tmp / "train_state.json").write_text(json.dumps({**(train_state or {}), "optimizer": extra}))
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    if keep > 0:
        for old in sorted(p for p in final.parent.glob("step_*") if p.is_dir())[:-keep]:
            shutil.rmtree(old)
    return final


def latest_wm_checkpoint(out_dir: str | Path) -> Path | None:
    found = sorted(p for p in (Path(out_dir) / "checkpoints").glob("step_*") if p.is_dir())
    return found[-1] if found else None


def resolve(path: str | Path) -> Path:
    """A checkpoint folder, or a training run folder (its latest checkpoint)."""
    p = Path(path)
    if (p / "config.json").is_file():
        return p
    latest = latest_wm_checkpoint(p)
    if latest is None:
        raise CheckpointError(f"{p}: neither a world-model checkpoint (no config.json) nor a run with checkpoints/")
    return latest


def load_checkpoint(path: str | Path, with_optimizer: bool = False
                    ) -> tuple[WorldModel, WMJobConfig, dict[str, Any], dict[str, Any] | None, dict[str, Any]]:
    """(model in eval mode, config, meta, optimizer state or None, train state)."""
    from vla.config import from_dict

    p = resolve(path)
    try:
        cfg = json.loads((p / "config.json").read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{p / 'config.json'}: corrupt (invalid JSON: {e})") from e
    if cfg.get("format") != FORMAT:
        raise CheckpointError(f"{p}: not a world-model checkpoint (format {cfg.get('format')!r}, expected {FORMAT!r})")
    job = WMJobConfig(model=from_dict(WorldModelConfig, cfg["model"], f"{p}/config.json model"),
                      train=from_dict(WMTrainConfig, cfg["train"], f"{p}/config.json train"))
    model = WorldModel(job.model)
    tensors = load_tensors(p / "model.safetensors")
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    if missing or unexpected:
        raise CheckpointError(f"{p / 'model.safetensors'}: does not fit the config (missing {missing[:3]}, "
                              f"unexpected {unexpected[:3]})")
    model.eval()
    opt_state, train_state = None, {}
    if (p / "train_state.json").is_file():
        train_state = json.loads((p / "train_state.json").read_text())
        if with_optimizer and (p / "optimizer.safetensors").is_file():
            opt_state = _optimizer_state(load_tensors(p / "optimizer.safetensors"), train_state["optimizer"])
    return model, job, cfg.get("meta", {}), opt_state, train_state
