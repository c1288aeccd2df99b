"""Does an ensemble's disagreement flag its large errors? Per frame of a store (e.g. expert episodes under the
`realistic` preset's visual kinds): each member's estimate, the mean's position error, and the members' spread
(the largest distance of a member from the mean).

    vla sim collect runs/s21/vis_tune.zarr obs_mode=state episodes=60 seed_range=tune workers=2 expert_gain=0.4 \\
        "perturb=camera_shift:10,camera_rot:1,surface_colour:0.1,distractor:0.2,lighting:0.2,colour:0.05,blur:0.5,pixel_noise:3,action_noise:0.02"
    python experiments/pose_ensemble_spread.py runs/s21/ens3 runs/s21/vis_tune.zarr

Prints, per object, the mean's and the first member's median and p90 error, the spread's median and p90, the
Spearman correlation of spread and error, and the AUROC of the spread for frames more than 20 mm off.
"""

from __future__ import annotations

import argparse

import numpy as np

from vla.perception.data import load_frames
from vla.perception.estimator import PoseEnsemble, PoseEstimator, mean_poses, member_spread_mm
from vla.perception.model import position_error_mm
from vla.perception.train import estimate_frames

BIG_MM = 20.0


def main() -> None:
    from scipy.stats import spearmanr
    from sklearn.metrics import roc_auc_score

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ensemble")
    ap.add_argument("store")
    args = ap.parse_args()
    ens = PoseEstimator.load(args.ensemble)
    if not isinstance(ens, PoseEnsemble):
        ap.error(f"{args.ensemble}: one estimator, not an ensemble (no ensemble.json)")
    frames = load_frames(args.store, ens.cameras, 1, progress=False)
    each = np.stack([estimate_frames(m, frames) for m in ens.members])
    mean, spread = mean_poses(each), member_spread_mm(each)
    for k, o in enumerate(ens.objects):
        err = position_error_mm(mean[:, k], frames.poses[:, k])
        one = position_error_mm(each[0][:, k], frames.poses[:, k])
        big = err > BIG_MM
        auroc = roc_auc_score(big, spread[:, k]) if 0 < big.sum() < len(big) else float("nan")
        rho = spearmanr(spread[:, k], err)[0]
        print(f"{o}: {len(err)} frames; the mean {np.median(err):.1f} mm (p90 {np.percentile(err, 90):.1f}), member 0 "
              f"{np.median(one):.1f} ({np.percentile(one, 90):.1f}); spread {np.median(spread[:, k]):.1f} "
              f"({np.percentile(spread[:, k], 90):.1f}); Spearman(spread, error) {rho:.2f}; "
              f"AUROC for > {BIG_MM:g} mm {auroc:.2f} ({big.mean():.3f} of frames)")


if __name__ == "__main__":
    main()
