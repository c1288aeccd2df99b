"""Self-calibration from the hand, offline (tried 2026-12-06 night; it did not work).

Under a moved camera the pose estimator's error is mostly one offset per episode (experiments/pose_error_bias.py).
The arm knows its hand's position exactly, so an estimator of the hand from the images alone (no arm state in)
would be off by what the moved camera shifts, and that offset could be taken off the objects' estimates. This
trains such a hand estimator on a store (the job's estimator store), then on a perturbed store reports, per
object, the median per-episode error as is, after subtracting the running mean of the hand's image-vs-arm
offset (causal, as a deployment could), and after subtracting its whole-episode mean, with the per-axis
correlation of the episodes' hand and object offsets.

    python experiments/hand_self_calibration.py runs/s19/job_pr100/perception/train.zarr runs/s21/hand_img \\
        runs/s19/job_pr100/perception/estimator runs/s21/vis_tune.zarr    (vis_tune: pose_ensemble_spread.py's)

`--relative` tries the other way round: an image-only estimator of each object's offset from the hand, the arm's
exact hand position added back (a moved camera shifts an object and the hand alike in the image), and reports
each object's per-episode error and bias against the given estimator's.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from vla.config import load_config
from vla.perception.config import PerceptionConfig
from vla.perception.data import Frames, load_frames, split_episodes
from vla.perception.estimator import PoseEstimator
from vla.perception.train import estimate_frames, train_frames


def calibrated_errors_mm(err: np.ndarray, offset: np.ndarray, episode: np.ndarray) -> dict[str, float]:
    """err, offset [N, 3] (m) per frame, episode [N] -> the median over episodes of each episode's median error
    (mm): as is, minus the running mean of the offset so far, minus the episode's mean offset."""
    rows: dict[str, list[float]] = {"as is": [], "running mean": [], "episode mean": []}
    for ep in np.unique(episode):
        m = episode == ep
        d = offset[m]
        running = np.cumsum(d, 0) / np.arange(1, len(d) + 1)[:, None]
        rows["as is"].append(float(np.median(np.linalg.norm(err[m], axis=1))))
        rows["running mean"].append(float(np.median(np.linalg.norm(err[m] - running, axis=1))))
        rows["episode mean"].append(float(np.median(np.linalg.norm(err[m] - d.mean(0), axis=1))))
    return {k: round(1000.0 * float(np.median(v)), 1) for k, v in rows.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("train_store")
    ap.add_argument("hand_dir", type=Path, help="the hand estimator's folder (trained there if absent)")
    ap.add_argument("estimator")
    ap.add_argument("test_store")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--relative", action="store_true", help="estimate the objects' offsets from the hand instead")
    args = ap.parse_args()
    if args.relative:
        return relative(args)
    train_image_only(args.train_store, args.hand_dir, args.steps, "hand")
    hand_est, est = PoseEstimator.load(args.hand_dir), PoseEstimator.load(args.estimator)
    frames = load_frames(args.test_store, est.cameras, 1, progress=False)
    pred = estimate_frames(est, frames)
    offset = estimate_frames(hand_est, frames)[:, 0, :3] - frames.arm[:, :3]
    print(f"the hand from the images alone: {1000 * np.median(np.linalg.norm(offset, axis=1)):.1f} mm off")
    eps = np.unique(frames.episode)
    for k, o in enumerate(est.objects):
        err = pred[:, k, :3] - frames.poses[:, k, :3]
        corr = [float(np.corrcoef([offset[frames.episode == e, a].mean() for e in eps],
                                  [err[frames.episode == e, a].mean() for e in eps])[0, 1]) for a in range(3)]
        print(o, calibrated_errors_mm(err, offset, frames.episode), "episode offsets' correlation per axis",
              np.round(corr, 2))


def train_image_only(store: str, out: Path, steps: int, target: str) -> None:
    """An estimator with no arm state in, of the hand's pose (`target` hand) or of every object's offset from
    the hand (`target` offsets), on `store`'s frames; written to `out` unless it is there."""
    if (out / "estimator.json").exists():
        return
    data = load_frames(store, None, 1, progress=False)
    if target == "hand":
        frames = Frames(data.images, data.arm[:, None, :7].copy(), data.episode, data.task, ("hand",), data.arm)
    else:
        poses = data.poses.copy()
        poses[:, :, :3] -= data.arm[:, None, :3]
        frames = Frames(data.images, poses, data.episode, data.task, data.objects, data.arm)
    cfg = load_config(PerceptionConfig, "perception", "default",
                      [f"out_dir={out}", f"steps={steps}", "arm_state=false", "relative=none"])
    tr, va = split_episodes(int(data.episode.max()) + 1, cfg.val_episodes, 0)
    print("held-out frames:", train_frames(store, frames, tr, va, cfg, out, 0, True, time.perf_counter())["val"])


def per_episode_mm(err: np.ndarray, episode: np.ndarray) -> tuple[float, float]:
    """err [N, 3] (m) -> (the median over episodes of each one's median error, of each one's mean offset), mm."""
    eps = np.unique(episode)
    total = [np.median(np.linalg.norm(err[episode == e], axis=1)) for e in eps]
    bias = [np.linalg.norm(err[episode == e].mean(0)) for e in eps]
    return round(1000.0 * float(np.median(total)), 1), round(1000.0 * float(np.median(bias)), 1)


def relative(args: argparse.Namespace) -> None:
    train_image_only(args.train_store, args.hand_dir, args.steps, "offsets")
    rel, est = PoseEstimator.load(args.hand_dir), PoseEstimator.load(args.estimator)
    frames = load_frames(args.test_store, est.cameras, 1, progress=False)
    pred = estimate_frames(rel, frames)
    pred[:, :, :3] += frames.arm[:, None, :3]
    base = estimate_frames(est, frames)
    for k, o in enumerate(est.objects):
        truth = frames.poses[:, k, :3]
        print(o, "(error, bias) mm: the estimator", per_episode_mm(base[:, k, :3] - truth, frames.episode),
              "image-only offsets", per_episode_mm(pred[:, k, :3] - truth, frames.episode))


if __name__ == "__main__":
    main()
