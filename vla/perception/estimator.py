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
ENSEMBLE_FORMAT = "pose-estimator ensemble v1"
ENSEMBLE = "ensemble.json"  # a folder holding this instead of META is an ensemble of the estimators it names


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
        """One estimator's folder, or an ensemble's (its `ensemble.json` names the members' folders)."""
        from vla.policy.checkpoint import CheckpointError, load_tensors

        folder = Path(folder)
        if _is_ensemble(folder):
            return PoseEnsemble.load(folder)
        meta_path, weights = folder / META, folder / WEIGHTS
        if not meta_path.is_file():
            raise CheckpointError(f"{folder}: not a pose estimator (no {META}; `vla perception train` writes one)")
        meta = _read_meta(meta_path, FORMAT)
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
        (folder / ENSEMBLE).unlink(missing_ok=True)  # an ensemble trained here before: this one replaces it
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


class PoseEnsemble(PoseEstimator):
    """Several estimators of one task, cameras and inputs (trained with different seeds), read as one: each
    object's position is the members' mean and its rotation their normalised mean quaternion (signs aligned
    to the first member's). Why: one training's errors are partly its own (the training seed moved the refined
    policy's success under a moved camera by 5 points, robustness_training.md p_rall), and averaging independent
    errors shrinks them. Lakshminarayanan et al. 2017 (arXiv:1612.01474) average deep ensembles' predictions the
    same way; we keep only the mean (no variance head)."""

    def __init__(self, members: list[PoseEstimator], meta: dict[str, Any]) -> None:
        if not members:
            raise ValueError("pose ensemble: no members")
        first = members[0]
        for i, m in enumerate(members[1:], 1):
            for what in ("task", "objects", "cameras", "image_size", "reads_arm"):
                if getattr(m, what) != getattr(first, what):
                    raise ValueError(f"pose ensemble: member {i} reads {what} {getattr(m, what)!r}, member 0 "
                                     f"{getattr(first, what)!r}")
        self.members = members
        self.meta = meta
        self.last_spread_mm: np.ndarray | None = None  # [N, K] of the last estimate_batch: how far apart they read
        # what the readers ask of an estimator (PoseEstimator's checks and reports); the networks are the members'
        self.task, self.objects, self.cameras = first.task, first.objects, first.cameras
        self.image_size = first.image_size
        self.arm_mean, self.relative = first.arm_mean, first.relative

    @classmethod
    def load(cls, folder: str | Path) -> PoseEnsemble:
        from vla.policy.checkpoint import CheckpointError

        folder = Path(folder)
        path = folder / ENSEMBLE
        meta = _read_meta(path, ENSEMBLE_FORMAT)
        names = meta.get("members")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise CheckpointError(f"{path}: 'members' must be a non-empty list of folders, got {names!r}")
        members = []
        for n in names:
            sub = folder / n
            if _is_ensemble(sub):
                raise CheckpointError(f"{path}: member {n} is itself an ensemble")
            members.append(PoseEstimator.load(sub))
        try:
            return cls(members, meta)
        except ValueError as e:
            raise CheckpointError(f"{path}: {e}") from None

    def save(self, folder: str | Path, extra: dict[str, Any] | None = None) -> Path:
        raise NotImplementedError("an ensemble is written by write_ensemble (its members are saved one by one)")

    @torch.no_grad()
    def estimate_batch(self, images: Mapping[str, np.ndarray], arm: np.ndarray | None = None) -> np.ndarray:
        each = np.stack([m.estimate_batch(images, arm) for m in self.members])
        self.last_spread_mm = member_spread_mm(each)
        return mean_poses(each)


def mean_poses(poses: np.ndarray) -> np.ndarray:
    """[M, ..., 7] poses of M estimators -> their mean [..., 7]: positions averaged; quaternions flipped onto
    the first member's hemisphere, averaged and normalised (for rotations a few degrees apart this is the
    chordal mean)."""
    p = np.asarray(poses, np.float64)
    q = p[..., 3:7]
    sign = np.where(np.sum(q * q[:1], axis=-1, keepdims=True) < 0, -1.0, 1.0)
    out = np.concatenate([p[..., :3].mean(0), (q * sign).mean(0)], axis=-1)
    return canonical_quat(out)


def member_spread_mm(poses: np.ndarray) -> np.ndarray:
    """[M, ..., 7] poses of M estimators -> [...]: the largest distance (mm) of a member's position from their
    mean (how far apart the members read; 0 for one member)."""
    p = np.asarray(poses, np.float64)[..., :3]
    return 1000.0 * np.linalg.norm(p - p.mean(0, keepdims=True), axis=-1).max(0)


def write_ensemble(folder: str | Path, members: list[str], extra: dict[str, Any] | None = None,
                   replace: bool = False) -> Path:
    """An ensemble folder: `ensemble.json` naming the members' folders (relative to it), each loaded and
    checked first, so a folder that names a missing or mismatched member is never written. A folder that holds
    an estimator is refused unless `replace` (training an ensemble where one estimator was trained before)."""
    folder = Path(folder)
    if (folder / META).exists() and not replace:
        raise ValueError(f"{folder}: holds a pose estimator, which an ensemble there would replace; "
                         "write the ensemble to another folder")
    folder.mkdir(parents=True, exist_ok=True)
    meta = {**(extra or {}), "format": ENSEMBLE_FORMAT, "members": list(members)}
    PoseEnsemble([PoseEstimator.load(folder / m) for m in members], meta)
    tmp = folder / (ENSEMBLE + ".tmp")
    tmp.write_text(json.dumps(meta, indent=1))
    tmp.replace(folder / ENSEMBLE)
    for stale in (META, WEIGHTS):  # a single estimator trained here before: the ensemble replaces it
        (folder / stale).unlink(missing_ok=True)
    return folder


def _is_ensemble(folder: Path) -> bool:
    """The folder holds an ensemble's file and no estimator of its own (a folder with both is the estimator)."""
    return (folder / ENSEMBLE).is_file() and not (folder / META).is_file()


def _read_meta(path: Path, fmt: str) -> dict[str, Any]:
    """A folder's JSON, or one line naming the file that is not JSON or not of `fmt`."""
    from vla.policy.checkpoint import CheckpointError

    try:
        meta = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{path}: not JSON ({e.msg}, line {e.lineno})") from None
    if not isinstance(meta, dict) or meta.get("format") != fmt:
        got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise CheckpointError(f"{path}: format {got!r}, expected {fmt!r}")
    return meta


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
