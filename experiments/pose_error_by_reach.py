"""Where a pose estimator is wrong: its position error binned by the hand's distance to the cube (the state's
`cube - hand` feature), on a store's frames. The job's refined policy loses its estimated-pose episodes in
the grasp; this says whether the estimator is worse there than across the approach.

    python experiments/pose_error_by_reach.py runs/main62/perception/estimator runs/main62/perception/eval.zarr

Writes experiments/results/pose_error_by_reach.json and prints the table.
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import numpy as np

from vla.perception.data import load_frames
from vla.perception.estimator import PoseEstimator
from vla.perception.model import position_error_mm

BINS_CM = (0.0, 3.0, 6.0, 10.0, 20.0, np.inf)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("estimator", type=Path)
    ap.add_argument("store", type=Path)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "pose_error_by_reach.json")
    args = ap.parse_args()
    from vla.data.store import EpisodeStore
    from vla.protocol import range_of_seeds

    est = PoseEstimator.load(args.estimator)
    frames = load_frames(args.store, est.cameras, progress=False)
    store = EpisodeStore.open(args.store)
    states = np.asarray(store.read("state", 0, store.n_steps), np.float64)
    reach_cm = 100 * np.linalg.norm(states[:, 16:19], axis=1)  # pick_place: cube - hand (vla.robot.objects)
    pred = np.concatenate([est.estimate_batch({c: v[i:i + 256] for c, v in frames.images.items()})
                           for i in range(0, len(frames), 256)])
    err = {o: position_error_mm(pred[:, k], frames.poses[:, k]) for k, o in enumerate(frames.objects)}
    rows = []
    for lo, hi in itertools.pairwise(BINS_CM):
        m = (reach_cm >= lo) & (reach_cm < hi)
        if m.any():
            rows.append({"reach_cm": [lo, None if np.isinf(hi) else hi], "frames": int(m.sum()),
                         **{f"{o}_mm_median": round(float(np.median(e[m])), 2) for o, e in err.items()},
                         **{f"{o}_mm_p90": round(float(np.percentile(e[m], 90)), 2) for o, e in err.items()}})
    seeds = [int(s) for s in store.table().seed]
    out = {"estimator": str(args.estimator), "store": str(args.store), "seed_range": range_of_seeds(seeds),
           "episodes": len(seeds), "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print("| hand to cube (cm) | frames | cube median / p90 (mm) | zone median / p90 (mm) |\n|---|---|---|---|")
    for r in rows:
        lo, hi = r["reach_cm"]
        print(f"| {lo:g}-{'' if hi is None else f'{hi:g}'} | {r['frames']} | {r['cube_mm_median']:.1f} / "
              f"{r['cube_mm_p90']:.1f} | {r['zone_mm_median']:.1f} / {r['zone_mm_p90']:.1f} |")


if __name__ == "__main__":
    main()
