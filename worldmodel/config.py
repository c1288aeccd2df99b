"""Typed configuration of the world model and its training (`configs/worldmodel/*.yaml`).

A preset has two sections, `model:` and `train:`; `key=value` overrides are dotted
(`model.ensemble=3 train.steps=200`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class WorldModelConfig:
    chunk: int = 8  # actions per dynamics step (= the evaluator's n_action_steps)
    horizon: int = 5  # chunks of latent consistency per training sequence
    cameras: list[str] = field(default_factory=list)  # cameras the encoder sees ([] = state only)
    image_size: int = 64  # images are resized to this square size
    state_inputs: int = 0  # leading state dims the encoder sees (0 = all; 9 = the native proprio)
    probe_dims: list[int] = field(default_factory=list)  # state dims of privileged object pose (metres)
    latent_dim: int = 128
    hidden: int = 256
    ensemble: int = 5
    simnorm_groups: int = 8
    gamma: float = 0.99  # discount of the value (success-to-go) target, per env step
    # filled from the store when training starts (kept in the checkpoint)
    state_dim: int = 0
    action_dim: int = 0

    def validate(self) -> None:
        for name in ("chunk", "horizon", "latent_dim", "hidden", "ensemble", "simnorm_groups", "image_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"model.{name} must be >= 1, got {getattr(self, name)}")
        if self.latent_dim % self.simnorm_groups:
            raise ValueError(f"model.latent_dim {self.latent_dim} must be a multiple of model.simnorm_groups "
                             f"{self.simnorm_groups}")
        if self.state_inputs < 0:
            raise ValueError(f"model.state_inputs must be >= 0, got {self.state_inputs}")
        if not 0 < self.gamma <= 1:
            raise ValueError(f"model.gamma must be in (0, 1], got {self.gamma}")


@dataclass
class WMTrainConfig:
    steps: int = 3000
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 1e-5
    grad_clip: float = 10.0
    rho: float = 0.7  # weight rho^k of the k-th chunk of a sequence
    w_consistency: float = 10.0
    w_success: float = 1.0
    w_value: float = 1.0
    w_state: float = 1.0
    # sampling weight of an episode that failed or needed a takeover, relative to a clean success:
    # a model trained mostly on successes cannot tell them apart (World-VLA-Loop)
    oversample_failures: float = 2.0
    # weight of windows whose sequence contains the success step (rare positives of the success head)
    oversample_success_end: float = 4.0
    # chunk-truth sets of collect seeds (worldmodel/chunk_rank.py): K candidate chunks per state and their
    # outcomes; w_rank weighs the pairwise order of the candidates' values, w_rank_value their value targets
    rank_truth: list[str] = field(default_factory=list)
    w_rank: float = 1.0
    w_rank_value: float = 1.0
    rank_states: int = 16  # states (each with its K candidates) per step
    val_fraction: float = 0.1
    split_seed: int = 0
    seed: int = 0
    log_every: int = 50
    ckpt_every: int = 1000
    keep_checkpoints: int = 2
    tensorboard: bool = True
    progress: bool = True
    threads: int = 0  # torch threads (0 = torch's default)

    def validate(self) -> None:
        for name in ("steps", "batch_size", "log_every", "ckpt_every"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"train.{name} must be >= 1, got {getattr(self, name)}")
        if self.lr <= 0 or not 0 < self.rho <= 1 or not 0 <= self.val_fraction < 1:
            raise ValueError("need train.lr > 0, 0 < train.rho <= 1, 0 <= train.val_fraction < 1")
        if self.oversample_failures <= 0 or self.oversample_success_end <= 0:
            raise ValueError("train.oversample_* must be > 0")
        if self.rank_truth and (self.rank_states < 1 or self.w_rank < 0 or self.w_rank_value < 0):
            raise ValueError(f"train.rank_states must be >= 1 and train.w_rank, w_rank_value >= 0, got "
                             f"{self.rank_states}, {self.w_rank}, {self.w_rank_value}")


@dataclass
class WMJobConfig:
    model: WorldModelConfig = field(default_factory=WorldModelConfig)
    train: WMTrainConfig = field(default_factory=WMTrainConfig)

    def validate(self) -> None:
        self.model.validate()
        self.train.validate()
