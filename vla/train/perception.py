"""Labelled frames for the policy's perception head (`train.perception_frames`): a .npz file (read
without pickle) with `images/<camera>` uint8 [N, H, W, 3] and `targets` float32 [N, K], standardised,
as `python -m sim.vision_pretrain` writes it. Each training step adds the head's loss on a batch of
them to the flow loss (co-training), so the camera encoders keep what the targets need while they
learn the demos (pretraining the encoders on them alone is forgotten: main_job_notes.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


class PerceptionFrames:
    def __init__(self, path: str | Path, cameras: list[str]) -> None:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"perception_frames file not found: {path} (a .npz from sim.vision_pretrain)")
        try:
            with np.load(path, allow_pickle=False) as z:
                data = {k: z[k] for k in z.files}
        except (ValueError, OSError) as e:
            raise ValueError(f"{path}: not a readable .npz without pickled objects ({e})") from None
        if "targets" not in data:
            raise KeyError(f"{path}: no 'targets' array (it has {sorted(data)})")
        self.targets = np.asarray(data["targets"], np.float32)
        if self.targets.ndim != 2 or not len(self.targets) or not np.isfinite(self.targets).all():
            raise ValueError(f"{path}: 'targets' must be finite float [N, K] with N > 0, got shape "
                             f"{self.targets.shape}")
        self.images: dict[str, np.ndarray] = {}
        for cam in cameras:
            key = f"images/{cam}"
            if key not in data:
                raise KeyError(f"{path}: no frames of camera '{cam}' (the policy's cameras: {cameras}; "
                               f"the file has {sorted(k for k in data if k.startswith('images/'))})")
            im = data[key]
            if im.dtype != np.uint8 or im.ndim != 4 or im.shape[-1] != 3 or len(im) != len(self.targets):
                raise ValueError(f"{path}: '{key}' must be uint8 [{len(self.targets)}, H, W, 3], got {im.dtype} "
                                 f"{im.shape}")
            self.images[cam] = im

    @property
    def dim(self) -> int:
        return int(self.targets.shape[1])

    def __len__(self) -> int:
        return len(self.targets)

    def batch(self, rng: np.random.Generator, size: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
        idx = np.sort(rng.choice(len(self), size))
        return {c: im[idx] for c, im in self.images.items()}, self.targets[idx]


def frames_dim(path: str | Path) -> int:
    """K of a frames file, without loading its images."""
    with np.load(Path(path), allow_pickle=False) as z:
        if "targets" not in z.files:
            raise KeyError(f"{path}: no 'targets' array")
        return int(z["targets"].shape[1])
