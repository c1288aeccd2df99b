"""How a pose estimator is wrong: per episode, the mean of its position error while the object rests (a bias
the policy cannot average away) against what varies about that mean from step to step, on a store's frames.

    python experiments/pose_error_bias.py STORE EST [EST ...] [--out experiments/results/pose_error_bias.json] [--merge]

For a moving object (the cube), only the frames before it leaves the table count (it rests until grasped);
"near the hand" is the frames within 6 cm of the hand, where the grasp is decided. Prints one JSON line per estimator.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from vla.data.store import EpisodeStore
from vla.perception.data import load_frames
from vla.perception.estimator import PoseEstimator
from vla.perception.train import estimate_frames
from vla.protocol import range_of_seeds
from vla.robot.objects import static_objects

LIFTED_M = 0.005  # the cube has left the table once it is this much above where it started
NEAR_CM = 6.0


def decompose(errors_mm: np.ndarray, starts: np.ndarray, lengths: np.ndarray, resting: np.ndarray,
              near: np.ndarray) -> dict[str, float]:
    """errors [N, 3] (mm) of one object; per episode its mean over the resting frames (the bias) and the
    median distance of those frames' errors from it (the residual)."""
    bias, residual, total, close = [], [], [], []
    for s, n in zip(starts, lengths, strict=True):
        m = resting[s:s + n]
        if m.sum() < 5:
            continue
        e = errors_mm[s:s + n][m]
        b = e.mean(axis=0)
        bias.append(np.linalg.norm(b))
        residual.append(np.median(np.linalg.norm(e - b, axis=1)))
        total.append(np.median(np.linalg.norm(e, axis=1)))
        k = m & near[s:s + n]
        if k.any():
            close.append(np.median(np.linalg.norm(errors_mm[s:s + n][k], axis=1)))
    return {"episodes": len(bias), "bias_mm_median": float(np.median(bias)),
            "bias_mm_p90": float(np.percentile(bias, 90)), "residual_mm_median": float(np.median(residual)),
            "total_mm_median": float(np.median(total)),
            "near_hand_mm_median": float(np.median(close)) if close else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", type=Path)
    ap.add_argument("estimators", type=Path, nargs="+")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "pose_error_bias.json")
    ap.add_argument("--merge", action="store_true", help="keep --out's rows of other estimators (same store)")
    args = ap.parse_args()
    table = EpisodeStore.open(args.store).table()
    rows = []
    for folder in args.estimators:
        est = PoseEstimator.load(folder)
        frames = load_frames(args.store, est.cameras, progress=False)
        pred = estimate_frames(est, frames)
        row = {"estimator": str(folder), "reads_arm": est.reads_arm,
               "relative": [o for o, r in zip(est.objects, est.relative, strict=True) if r]}
        for k, name in enumerate(frames.objects):
            z = frames.poses[:, k, 2]
            start_z = np.repeat(z[table.episode_starts], table.lengths)
            resting = np.ones(len(z), bool) if name in static_objects(frames.task) else z < start_z + LIFTED_M
            near = 100 * np.linalg.norm(frames.poses[:, k, :3] - frames.arm[:, :3], axis=1) < NEAR_CM
            row[name] = decompose(1000 * (pred[:, k, :3] - frames.poses[:, k, :3]), table.episode_starts,
                                  table.lengths, resting, near)
        rows.append(row)
        print(json.dumps(row))
    if args.merge and args.out.exists():
        old = json.loads(args.out.read_text())
        if old["store"] != str(args.store):
            raise SystemExit(f"--merge: {args.out} was measured on {old['store']}, not {args.store}")
        mine = {r["estimator"] for r in rows}
        rows = [r for r in old["rows"] if r["estimator"] not in mine] + rows
    out = {"store": str(args.store), "seed_range": range_of_seeds([int(s) for s in table.seed]), "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
