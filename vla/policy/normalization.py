"""Normalisation owned by the policy (as in LeRobot): centres and scales live in buffers, so they
are saved in `model.safetensors` with the weights and follow the model to any device or to ONNX.

Same formulas as `vla.data.normalize.Normalizer`: "mean_std" maps by (x - mean) / std, "quantile"
maps [q01, q99] to [-1, 1]; images per channel by the pixel mean/std of `images/<camera>`.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from vla.data.stats import Stats
from vla.policy.config import PolicyConfig

EPS = 1e-6


def center_scale(stats: Stats, mode: str, floor: float = EPS) -> tuple[np.ndarray, np.ndarray]:
    """The centre and scale of `mode`, the scale at least `floor` (the state's: PolicyConfig.state_floor;
    actions keep EPS, since their scale multiplies the network's output instead of dividing an input)."""
    if mode == "mean_std":
        return np.asarray(stats.mean), np.maximum(np.asarray(stats.std), floor)
    if mode == "quantile":
        q01, q99 = np.asarray(stats.q01), np.asarray(stats.q99)
        return (q99 + q01) / 2, np.maximum((q99 - q01) / 2, floor)
    raise ValueError(f"unknown normalisation mode '{mode}' (valid: mean_std, quantile)")


class PolicyNormalizer(nn.Module):
    state_center: torch.Tensor
    state_scale: torch.Tensor
    action_center: torch.Tensor
    action_scale: torch.Tensor
    image_mean: torch.Tensor
    image_std: torch.Tensor
    has_stats: torch.Tensor

    def __init__(self, cfg: PolicyConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.register_buffer("state_center", torch.zeros(cfg.state_dim))
        self.register_buffer("state_scale", torch.ones(cfg.state_dim))
        self.register_buffer("action_center", torch.zeros(cfg.action_dim))
        self.register_buffer("action_scale", torch.ones(cfg.action_dim))
        n = len(cfg.cameras)
        # Until stats are set, map pixels 0..255 to about [-1, 1].
        self.register_buffer("image_mean", torch.full((max(n, 1), 3), 127.5))
        self.register_buffer("image_std", torch.full((max(n, 1), 3), 127.5))
        self.register_buffer("has_stats", torch.zeros((), dtype=torch.bool))

    def set_stats(self, stats: dict[str, Stats]) -> None:
        """Fill the buffers; raises naming any missing key or a shape that does not fit."""
        needed = ["state", "action", *(f"images/{c}" for c in self.cfg.cameras)]
        missing = [k for k in needed if k not in stats]
        if missing:
            raise KeyError(f"normalisation stats lack key '{missing[0]}' (the policy needs {needed}, "
                           f"got {sorted(stats)})")

        def put(name: str, value: np.ndarray, what: str) -> None:
            buf = getattr(self, name)
            value = np.asarray(value, np.float32).reshape(-1)
            if value.shape[0] != buf.shape[-1]:
                raise ValueError(f"normalisation stats '{what}' have {value.shape[0]} dims, the policy "
                                 f"config expects {buf.shape[-1]}")
            buf.copy_(torch.from_numpy(value))

        for key, mode, floor in (("state", self.cfg.state_norm, self.cfg.state_floor),
                                 ("action", self.cfg.action_norm, EPS)):
            c, s = center_scale(stats[key], mode, floor)
            put(f"{key}_center", c, key)
            put(f"{key}_scale", s, key)
        for i, cam in enumerate(self.cfg.cameras):
            if self.cfg.vision_backbone == "efficientnet_lite0":
                continue  # the pixels as its ImageNet weights were trained on (the buffers' 127.5, 127.5)
            img = stats[f"images/{cam}"]
            # A floor of one grey level keeps a constant channel from blowing up.
            for name, value in (("mean", img.mean), ("std", np.maximum(np.asarray(img.std), 1.0))):
                value = np.asarray(value, np.float32).reshape(-1)
                if value.shape != (3,):
                    raise ValueError(f"normalisation stats 'images/{cam}' have {value.shape[0]} channels, "
                                     "expected 3")
                getattr(self, f"image_{name}")[i].copy_(torch.from_numpy(value))
        self.has_stats.fill_(True)

    def state(self, x: torch.Tensor) -> torch.Tensor:
        # Clipped: a feature far outside anything in training (a broken sensor, a floored near-constant
        # feature that moved) reaches the network bounded. Checkpoints from before the clip get it too;
        # within the demos' range nothing changes.
        clip = float(self.cfg.state_clip)
        return ((x - self.state_center) / self.state_scale).clamp(-clip, clip)

    def action(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.action_center) / self.action_scale

    def unaction(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.action_scale + self.action_center

    def image(self, x: torch.Tensor, cam_index: int) -> torch.Tensor:
        """x float [N, 3, H, W] in pixel units."""
        return (x - self.image_mean[cam_index, :, None, None]) / self.image_std[cam_index, :, None, None]
