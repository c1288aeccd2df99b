"""A trained pose estimator: one folder (`estimator.safetensors` + `estimator.json`) that the simulator's
evaluation, the executor benchmark and the ROS pose node load the same way (`PoseEstimator.load`).
Weights are safetensors only; the JSON records the cameras, image sizes, objects and normalisation, and
the weights' sha256, so a swapped or truncated file is refused by name."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vla.perception.model import ARM, PoseNet, arm_features, canonical_quat

FORMAT = "pose-estimator v1"
WEIGHTS, META = "estimator.safetensors", "estimator.json"


class PoseEstimator:
    def __init__(self, net: PoseNet, meta: dict[str, Any]) -> None:
        self.net = net.eval()
        self.meta = meta
        self.task: str = meta["task"]
        self.objects: tuple[str, ...] = tuple(meta["objects"])
        self.cameras: list[str] = list(meta["cameras"])
        self.image_size: dict[str, tuple[int, int]] = {c: tuple(v) for c, v in meta["image_size"].items()}
        self.mean = np.asarray(meta["mean"], np.float64)
        self.scale = np.asarray(meta["scale"], np.float64)
        # {"mean", "scale", "relative"}: the estimator also reads the arm's state (hand pose, fingers), and the
        # positions of the objects `relative` names are estimated from the hand (the wrist camera's frame)
        arm = meta.get("arm")
        self.arm_mean = None if arm is None else np.asarray(arm["mean"], np.float64)
        self.arm_scale = None if arm is None else np.asarray(arm["scale"], np.float64)
        named = (arm or {}).get("relative") or []
        self.relative = np.array([o in named for o in self.objects])

    @property
    def reads_arm(self) -> bool:
        return self.arm_mean is not None

    @classmethod
    def load(cls, folder: str | Path) -> PoseEstimator:
        from vla.policy.checkpoint import CheckpointError, load_tensors

        folder = Path(folder)
        meta_path, weights = folder / META, folder / WEIGHTS
        if not meta_path.is_file():
            raise CheckpointError(f"{folder}: not a pose estimator (no {META}; `vla perception train` writes one)")
        try:
            meta = json.loads(meta_path.read_text())
        except json.JSONDecodeError as e:
            raise CheckpointError(f"{meta_path}: not JSON ({e.msg}, line {e.lineno})") from None
        if meta.get("format") != FORMAT:
            raise CheckpointError(f"{meta_path}: format {meta.get('format')!r}, expected {FORMAT!r}")
        if not weights.is_file():
            raise CheckpointError(f"{folder}: {WEIGHTS} is missing")
        if _sha256(weights) != meta.get("sha256"):
            raise CheckpointError(f"{weights}: does not match the sha256 {META} records (altered or truncated)")
        arch = meta["arch"]
        # the trunk's weights are in the safetensors with the rest: loading needs no wheel
        net = PoseNet(meta["cameras"], tuple(arch["channels"]), arch["keypoints"], arch["hidden"],
                      len(meta["objects"]), len(meta["arm"]["mean"]) if meta.get("arm") else 0,
                      arch.get("backbone", "cnn"), arch.get("stages", 3))
        try:
            net.load_state_dict(load_tensors(weights))
        except RuntimeError as e:
            raise CheckpointError(f"{weights}: does not fit the network {META} describes "
                                  f"({str(e).splitlines()[0]})") from None
        return cls(net, meta)

    def save(self, folder: str | Path, extra: dict[str, Any] | None = None) -> Path:
        from safetensors.torch import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        weights = folder / WEIGHTS
        save_file({k: v.detach().contiguous().cpu() for k, v in self.net.state_dict().items()}, str(weights))
        meta = {**self.meta, **(extra or {}), "format": FORMAT, "sha256": _sha256(weights)}
        tmp = folder / (META + ".tmp")
        tmp.write_text(json.dumps(meta, indent=1))
        tmp.replace(folder / META)  # the JSON names the weights: it lands last, whole
        self.meta = meta
        return folder

    def check_frames(self, images: Mapping[str, np.ndarray], batched: bool) -> None:
        """One line naming the camera, shape or dtype that the estimator cannot read."""
        for c in self.cameras:
            if c not in images:
                raise ValueError(f"pose estimator: no frame from camera '{c}' (it reads {', '.join(self.cameras)})")
            a = images[c]
            h, w = self.image_size[c]
            want = (h, w, 3)
            shape = tuple(a.shape[1:]) if batched else tuple(a.shape)
            if getattr(a, "dtype", None) != np.uint8 or shape != want or (batched and a.ndim != 4):
                raise ValueError(f"pose estimator: camera '{c}' frame is {getattr(a, 'dtype', type(a).__name__)} "
                                 f"{tuple(a.shape)}, expected uint8 {('N', *want) if batched else want}")

    def check_arm(self, arm: np.ndarray | None, n: int | None) -> np.ndarray | None:
        """The arm state [N, D] (or [D] when `n` is None) as float64, or one line naming what is wrong."""
        if not self.reads_arm:
            return None
        d = ARM
        want = (d,) if n is None else (n, d)
        a = None if arm is None else np.asarray(arm, np.float64)
        if a is None or a.shape != want or not np.all(np.isfinite(a)):
            got = "none" if a is None else f"{a.shape}{'' if np.all(np.isfinite(a)) else ' with NaN/inf'}"
            raise ValueError(f"pose estimator: it reads the arm's state, expected {want} finite values, got {got}")
        return a

    @torch.no_grad()
    def estimate_batch(self, images: Mapping[str, np.ndarray], arm: np.ndarray | None = None) -> np.ndarray:
        """{camera: uint8 [N, H, W, 3]} (and the arm's state [N, 9] for an estimator that reads it) -> poses
        float64 [N, K, 7] (position m, quaternion xyzw), in the order of `objects`."""
        self.check_frames(images, batched=True)
        n = len(images[self.cameras[0]])
        a = self.check_arm(arm, n)
        x = None if a is None else torch.from_numpy(((arm_features(a) - self.arm_mean) / self.arm_scale)
                                                     .astype(np.float32))
        out = self.net({c: torch.from_numpy(_writable(images[c])) for c in self.cameras}, x)
        poses = (self.mean + self.scale * out.double().numpy()).reshape(n, len(self.objects), 7)
        if self.relative.any():
            poses[:, self.relative, :3] += a[:, None, :3]
        return canonical_quat(poses)

    def estimate(self, images: Mapping[str, np.ndarray], arm: np.ndarray | None = None) -> np.ndarray:
        """One frame per camera {camera: uint8 [H, W, 3]} (and the arm's state [9]) -> poses [K, 7]."""
        self.check_frames(images, batched=False)
        a = self.check_arm(arm, None)
        return self.estimate_batch({c: np.asarray(images[c])[None] for c in self.cameras},
                                   None if a is None else a[None])[0]


def _writable(a: np.ndarray) -> np.ndarray:
    """torch shares a numpy array's memory and warns on a read-only one (a ROS message's buffer)."""
    a = np.ascontiguousarray(a)
    return a if a.flags.writeable else a.copy()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
