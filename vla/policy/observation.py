"""Observation batches -> model input arrays (numpy only, shared by the torch and ONNX policies),
with the checks that turn bad input into errors naming what is wrong, and the per-episode
observation history for n_obs_steps > 1 (padded at the front, padding marked in obs_mask).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vla.interfaces import Observation


@dataclass
class ModelInputs:
    images: list[np.ndarray]  # per camera (config order): uint8 [B, To, H, W, 3]
    state: np.ndarray  # float32 [B, To, D]
    obs_mask: np.ndarray  # bool [B, To]
    instructions: list[str]


def check_observation(obs: Observation, cameras: list[str], state_dim: int, index: int) -> None:
    if not isinstance(obs, dict):
        raise TypeError(f"observation {index} must be a dict (Observation), got {type(obs).__name__}")
    for key in ("state", "instruction"):
        if key not in obs:
            raise KeyError(f"observation {index} lacks key '{key}'")
    images = obs.get("images", {}) or {}
    unknown = sorted(set(images) - set(cameras))
    if unknown:
        known = ", ".join(cameras) if cameras else "none, state-only"
        raise KeyError(f"observation {index}: camera '{unknown[0]}' is not known to this policy "
                       f"(its cameras: {known})")
    missing = [c for c in cameras if c not in images]
    if missing:
        raise KeyError(f"observation {index} lacks camera '{missing[0]}' (the policy needs {cameras})")
    for cam in cameras:
        img = np.asarray(images[cam])
        if img.dtype != np.uint8 or img.ndim != 3 or img.shape[-1] != 3:
            raise ValueError(f"observation {index}: images['{cam}'] must be uint8 HxWx3, got {img.dtype} "
                             f"{img.shape}")
    state = np.asarray(obs["state"])
    if state.shape != (state_dim,):
        raise ValueError(f"observation {index}: state has shape {state.shape}, the policy expects ({state_dim},)")
    if not np.isfinite(state).all():
        raise ValueError(f"observation {index}: state has non-finite values")
    instruction = obs["instruction"]
    if not isinstance(instruction, str) or not instruction.strip():
        raise ValueError(f"observation {index}: instruction is empty: the policy is language-conditioned "
                         "and needs a non-empty instruction")


class ObservationHistory:
    """Keeps the last To observations per batch slot; `reset()` starts new episodes."""

    def __init__(self, cameras: list[str], state_dim: int, n_obs_steps: int) -> None:
        self.cameras, self.state_dim, self.n_obs_steps = cameras, state_dim, n_obs_steps
        self._slots: list[deque[Observation]] = []

    def reset(self) -> None:
        self._slots = []

    def push(self, obs_batch: Sequence[Observation]) -> ModelInputs:
        if len(obs_batch) == 0:
            raise ValueError("obs_batch is empty: pass at least one observation")
        for i, obs in enumerate(obs_batch):
            check_observation(obs, self.cameras, self.state_dim, i)
        if len(self._slots) != len(obs_batch):  # a new batch size means new episodes
            self._slots = [deque(maxlen=self.n_obs_steps) for _ in obs_batch]
        for slot, obs in zip(self._slots, obs_batch, strict=True):
            slot.append(obs)
        to = self.n_obs_steps
        b = len(obs_batch)
        state = np.empty((b, to, self.state_dim), np.float32)
        mask = np.zeros((b, to), bool)
        frames: list[list[Observation]] = []
        for i, slot in enumerate(self._slots):
            pad = to - len(slot)
            seq = [slot[0]] * pad + list(slot)  # repeat the oldest frame; masked out anyway
            mask[i, pad:] = True
            frames.append(seq)
            state[i] = np.stack([np.asarray(o["state"], np.float32) for o in seq])
        images = []
        for cam in self.cameras:
            shapes = {np.asarray(seq[-1]["images"][cam]).shape for seq in frames}
            if len(shapes) > 1:
                raise ValueError(f"images['{cam}'] differ in size across the batch: {sorted(shapes)}")
            images.append(np.stack([np.stack([np.asarray(o["images"][cam]) for o in seq]) for seq in frames]))
        return ModelInputs(images=images, state=state, obs_mask=mask,
                           instructions=[o["instruction"] for o in obs_batch])
