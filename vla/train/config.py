"""Typed training configuration and its YAML presets (`configs/train/*.yaml`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class TrainConfig:
    steps: int = 20_000
    batch_size: int = 64
    lr: float = 3e-4
    weight_decay: float = 1e-4
    betas: tuple[float, float] = (0.9, 0.95)
    warmup_steps: int = 500
    min_lr_ratio: float = 0.1  # cosine decays to lr * min_lr_ratio
    grad_clip: float = 1.0
    ema_decay: float = 0.999  # 0 disables EMA
    # false: the average starts at full decay from the initial weights (fine-tuning an EMA checkpoint)
    ema_warmup: bool = True
    # > 0: normalised action targets clipped to [-target_clip, target_clip] in the loss
    # (vla.policy.flow.clip_targets); 0 = off. Quantile normalisation puts the demos inside ~[-1.6, 1.6].
    target_clip: float = 0.0
    seed: int = 0
    # a safetensors file whose tensors initialise those of the same name (e.g. `vision.<camera>.*` from
    # `python -m sim.vision_pretrain`); the rest keep their seeded initial values. Not on resume.
    init_weights: str = ""
    # a .npz of labelled frames (vla/train/perception.py): each step adds perception_weight x the policy's
    # perception-head loss on a batch of them; the policy's perception_dim is set from the file
    perception_frames: str = ""
    perception_weight: float = 1.0
    # the object poses' and the arm's sensor errors drawn into each training window, by the perturbation
    # suite's names and units (vla/train/augment.py), e.g. "pose_bias:8,pose_noise:3"; "": off
    augment: str = ""
    log_every: int = 50
    val_every: int = 1000
    val_batches: int = 8
    ckpt_every: int = 5000
    eval_every: int = 0  # steps between evaluator calls (sim success rate); 0 = never
    keep_checkpoints: int = 2  # most recent step folders kept (0 keeps all)
    num_workers: int = 0
    compile: bool = False
    amp: bool = True  # bf16 autocast, only ever on CUDA
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    tensorboard: bool = True
    progress: bool = True

    def __post_init__(self) -> None:
        self.betas = (float(self.betas[0]), float(self.betas[1]))
        for name in ("steps", "batch_size", "log_every", "val_every", "ckpt_every"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"TrainConfig: {name} must be >= 1, got {getattr(self, name)}")
        if not (self.target_clip == 0 or self.target_clip >= 1):  # also rejects NaN
            raise ValueError(f"TrainConfig: target_clip must be 0 (off) or >= 1, got {self.target_clip}")
        from vla.train.augment import parse_augment

        parse_augment(self.augment)  # a bad name fails here, naming it
        if not self.perception_weight >= 0:
            raise ValueError(f"TrainConfig: perception_weight must be >= 0, got {self.perception_weight}")
        if self.lr <= 0 or not 0 <= self.ema_decay < 1 or self.warmup_steps < 0 or self.grad_clip < 0:
            raise ValueError("TrainConfig: need lr > 0, 0 <= ema_decay < 1, warmup_steps >= 0, grad_clip >= 0")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["betas"] = list(self.betas)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        from vla.config import from_dict

        return from_dict(cls, d)


def load_train_config(name_or_path: str | Path, **overrides: Any) -> TrainConfig:
    """A preset name (`debug`, `default`) or a YAML path, with keyword overrides (through the
    project's one config loader, `vla.config.load_config`)."""
    from vla.config import load_config

    return load_config(TrainConfig, "train", name_or_path, values=overrides)
