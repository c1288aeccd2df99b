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
    args = ap.parse_args()
    if not (args.hand_dir / "estimator.json").exists():
        data = load_frames(args.train_store, None, 1, progress=False)
        hand = Frames(data.images, data.arm[:, None, :7].copy(), data.episode, data.task, ("hand",), data.arm)
        cfg = load_config(PerceptionConfig, "perception", "default",
                          [f"out_dir={args.hand_dir}", f"steps={args.steps}", "arm_state=false", "relative=none"])
        tr, va = split_episodes(int(data.episode.max()) + 1, cfg.val_episodes, 0)
        val = train_frames(args.train_store, hand, tr, va, cfg, args.hand_dir, 0, True, time.perf_counter())["val"]
        print("the hand from the images, held-out frames:", val["hand"])
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


if __name__ == "__main__":
    main()
