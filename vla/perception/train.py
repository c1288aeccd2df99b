"""Training and measuring the pose estimator (`vla perception train`, `vla perception eval`)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vla.perception.config import PerceptionConfig
from vla.perception.data import Frames, load_frames, split_episodes
from vla.perception.estimator import PoseEnsemble, PoseEstimator, mean_poses, member_spread_mm, write_ensemble
from vla.perception.model import (
    ARM_FEATURES,
    PoseNet,
    arm_features,
    pose_loss,
    position_error_mm,
    rotation_error_deg,
    target_scale,
)


def _batch(frames: Frames, idx: np.ndarray, shift_px: int, gen: torch.Generator) -> dict[str, torch.Tensor]:
    from vla.policy.augment import random_shift

    out = {}
    for c, v in frames.images.items():
        x = torch.from_numpy(v[idx])
        out[c] = random_shift(x[:, None], shift_px, gen)[:, 0] if shift_px else x
    return out


def relative_objects(task: str, objects: tuple[str, ...], which: str) -> tuple[str, ...]:
    """The objects whose positions are estimated from the hand (PerceptionConfig.relative)."""
    from vla.robot.objects import static_objects

    if which == "none":
        return ()
    return tuple(o for o in objects if which == "all" or o not in static_objects(task))


def estimate_frames(estimator: PoseEstimator, frames: Frames, batch: int = 256) -> np.ndarray:
    """The estimator's poses [N, K, 7] of every frame, in batches."""
    if not len(frames):
        return np.zeros((0, len(estimator.objects), 7))
    arm = frames.arm if estimator.reads_arm else None
    return np.concatenate([estimator.estimate_batch({c: v[i:i + batch] for c, v in frames.images.items()},
                                                    None if arm is None else arm[i:i + batch])
                           for i in range(0, len(frames), batch)])


def errors(estimator: PoseEstimator, frames: Frames, batch: int = 256) -> dict[str, Any]:
    """Per object: position error (mm) and rotation error (degrees; only where the object's rotation
    varies) at the median, p90 and mean over `frames`."""
    return pose_errors(estimate_frames(estimator, frames, batch), frames, estimator.objects)


def pose_errors(pred: np.ndarray, frames: Frames, objects: tuple[str, ...]) -> dict[str, Any]:
    """`errors` of poses [N, K, 7] already estimated for `frames`."""
    out: dict[str, Any] = {"frames": len(frames), "episodes": len(np.unique(frames.episode))}
    for k, name in enumerate(objects):
        mm = position_error_mm(pred[:, k], frames.poses[:, k])
        row = {"position_mm_median": float(np.median(mm)), "position_mm_p90": float(np.percentile(mm, 90)),
               "position_mm_mean": float(mm.mean())}
        if np.ptp(frames.poses[:, k, 3:7], axis=0).max() > 1e-6:
            deg = rotation_error_deg(pred[:, k], frames.poses[:, k])
            row.update(rotation_deg_median=float(np.median(deg)), rotation_deg_p90=float(np.percentile(deg, 90)))
        out[name] = row
    return out


def train(store: str | Path, cfg: PerceptionConfig, progress: bool = True) -> dict[str, Any]:
    """Train on `store`'s frames (a held-out share of its episodes draws the validation curve) and write the
    estimator to `cfg.out_dir`; returns the run's summary (also `summary.json` there). With `cfg.ensemble` > 1,
    that many estimators (seeds seed, seed + 1, ...: each its own initialisation and batches, the same
    held-out episodes) go to `m0`, `m1`, ... under it, and `ensemble.json` makes the folder load as their
    mean (vla.perception.estimator.PoseEnsemble)."""
    from vla.data.store import EpisodeStore

    cfg.validate()
    t0 = time.perf_counter()
    n = EpisodeStore.open(store).n_episodes
    train_eps, val_eps = split_episodes(n, cfg.val_episodes, cfg.seed)
    data = load_frames(store, cfg.cameras, cfg.every, progress=progress)
    if cfg.ensemble == 1:
        return train_frames(store, data, train_eps, val_eps, cfg, Path(cfg.out_dir), cfg.seed, progress, t0)
    out_dir = Path(cfg.out_dir)
    members = [train_frames(store, data, train_eps, val_eps, cfg, out_dir / f"m{k}", cfg.seed + k, progress,
                            time.perf_counter()) for k in range(cfg.ensemble)]
    write_ensemble(out_dir, [f"m{k}" for k in range(cfg.ensemble)],
                   {"trained_on": str(store), "steps": cfg.steps, "seeds": [cfg.seed + k for k in range(cfg.ensemble)]},
                   replace=True)
    val_set = data.subset(np.isin(data.episode, val_eps))
    summary = {"store": str(store), "frames": members[0]["frames"], "val_frames": len(val_set), "steps": cfg.steps,
               "ensemble": cfg.ensemble, "seconds": round(time.perf_counter() - t0, 1),
               "val": errors(PoseEstimator.load(out_dir), val_set) if len(val_set) else None,
               "members_val": [m["val"] for m in members], "config": cfg.__dict__}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def train_frames(store: str | Path, data: Frames, train_eps: np.ndarray, val_eps: np.ndarray, cfg: PerceptionConfig,
                 out_dir: Path, seed: int, progress: bool, t0: float) -> dict[str, Any]:
    """One estimator trained on `data`'s frames of `train_eps` (its validation curve on `val_eps`) with `seed`,
    written to `out_dir`; its summary. `data` may carry other targets than a store's objects (an experiment's)."""
    from vla.progress import progress as tqdm

    torch.manual_seed(seed)
    train_set = data.subset(np.isin(data.episode, train_eps))
    val_set = data.subset(np.isin(data.episode, val_eps))
    relative = relative_objects(data.task, data.objects, cfg.relative)
    poses = train_set.poses.copy()
    poses[:, np.isin(data.objects, relative), :3] -= train_set.arm[:, None, :3]
    targets = poses.reshape(len(train_set), -1)
    mean, scale = target_scale(targets, cfg.scale_floor)
    arm_in = arm_features(train_set.arm) if cfg.arm_state else None
    arm_dim = ARM_FEATURES if cfg.arm_state else 0
    arm_mean, arm_scale = target_scale(arm_in, cfg.scale_floor) if cfg.arm_state else (None, None)
    cameras = list(data.images)
    net = PoseNet(cameras, tuple(cfg.channels), cfg.keypoints, cfg.hidden, len(data.objects), arm_dim,
                  cfg.backbone, cfg.backbone_stages)
    if cfg.backbone != "cnn":
        net.load_backbone(cfg.backbone_weights, cfg.frozen_blocks)
    meta = {"task": data.task, "objects": list(data.objects), "cameras": cameras,
            "image_size": {c: list(v.shape[1:3]) for c, v in data.images.items()},
            "arch": {"channels": list(cfg.channels), "keypoints": cfg.keypoints, "hidden": cfg.hidden,
                     "backbone": cfg.backbone, "stages": cfg.backbone_stages},
            "mean": mean.tolist(), "scale": scale.tolist()}
    if cfg.arm_state:
        meta["arm"] = {"mean": arm_mean.tolist(), "scale": arm_scale.tolist(), "relative": list(relative)}
    estimator = PoseEstimator(net, meta)
    # the camera trunks at backbone_lr_scale x lr (1 for the cnn), the rest at lr; frozen blocks in neither
    in_trunk = {id(p) for enc in net.encoders.values() for p in enc.cnn.parameters()}
    trainable = [p for p in net.parameters() if p.requires_grad]
    groups = [{"params": ps, "lr": lr} for ps, lr in (([p for p in trainable if id(p) not in in_trunk], cfg.lr),
                                                      ([p for p in trainable if id(p) in in_trunk],
                                                       cfg.lr * cfg.backbone_lr_scale)) if ps]
    # the fused kernel, as the policy's (vla.train.optim): 150 steps on the job's store in 21.0 s against 22.5
    opt = torch.optim.AdamW(groups, lr=cfg.lr, weight_decay=cfg.weight_decay, fused=True)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=[g["lr"] for g in groups], total_steps=cfg.steps,
                                                pct_start=0.05)
    y = torch.from_numpy(((targets - mean) / scale).astype(np.float32))
    arm = None if arm_in is None else torch.from_numpy(((arm_in - arm_mean) / arm_scale).astype(np.float32))
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    writer = _writer(out_dir)
    curve: list[dict[str, Any]] = []
    bar = tqdm(range(1, cfg.steps + 1), desc="pose estimator", disable=not progress)
    for step in bar:
        net.train()
        idx = rng.integers(0, len(train_set), cfg.batch_size)
        loss = pose_loss(net(_batch(train_set, idx, cfg.shift_px, gen), None if arm is None else arm[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        sched.step()
        if writer is not None and step % cfg.log_every == 0:
            writer.add_scalar("train/loss", loss.item(), step)
        if len(val_set) and (step % cfg.val_every == 0 or step == cfg.steps):
            net.eval()
            e = errors(estimator, val_set)
            point = {"step": step, "loss": float(loss.item()),
                     **{f"{o}_mm_median": e[o]["position_mm_median"] for o in data.objects}}
            curve.append(point)
            if writer is not None:
                for o in data.objects:
                    writer.add_scalar(f"val/{o}_position_mm_median", e[o]["position_mm_median"], step)
            if hasattr(bar, "set_postfix"):
                bar.set_postfix({k: round(v, 1) for k, v in point.items() if k.endswith("median")})
    net.eval()
    summary = {"store": str(store), "frames": len(train_set), "val_frames": len(val_set), "steps": cfg.steps,
               "seconds": round(time.perf_counter() - t0, 1), "curve": curve,
               "val": errors(estimator, val_set) if len(val_set) else None, "seed": seed, "config": cfg.__dict__}
    estimator.save(out_dir, {"trained_on": str(store), "steps": cfg.steps})
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    if writer is not None:
        writer.close()
    return summary


def evaluate(folder: str | Path, store: str | Path, every: int = 1, progress: bool = True) -> dict[str, Any]:
    """The estimator's errors on every frame (each `every`-th) of `store`, and the seed range its episodes
    came from (a figure on seeds it was chosen on is not a held-out one)."""
    from vla.data.store import EpisodeStore
    from vla.protocol import range_of_seeds

    est = PoseEstimator.load(folder)
    frames = load_frames(store, est.cameras, every, progress=progress)
    if frames.task != est.task:
        raise ValueError(f"{store}: task '{frames.task}', the estimator {folder} estimates '{est.task}'")
    seeds = [int(s) for s in EpisodeStore.open(store).table().seed]
    report = {"estimator": str(folder), "store": str(store), "seed_range": range_of_seeds(seeds)}
    if not isinstance(est, PoseEnsemble):
        return {**report, **errors(est, frames)}
    # each member estimates once: the ensemble's mean, each member alone, and how far apart they read
    each = np.stack([estimate_frames(m, frames) for m in est.members])
    spread = member_spread_mm(each)
    return {**report, **pose_errors(mean_poses(each), frames, est.objects),
            "members": [pose_errors(e, frames, est.objects) for e in each],
            "spread_mm": {o: {"median": float(np.median(spread[:, k])), "p90": float(np.percentile(spread[:, k], 90))}
                          for k, o in enumerate(est.objects)}}


def _writer(out_dir: Path) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # tensorboard is optional
        return None
    return SummaryWriter(str(out_dir / "tb"))
