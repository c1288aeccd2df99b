"""robustness.json's `camera_only_recipe_change` under `realistic`: the camera-only recipe with visual domain
randomisation (c_vis) against the one before (c_g04pc), both training seeds, each pair on the same 200 report
seeds, pooled over the 400 pairs. Re-run after the stale-distractor fix (4f9f51c); the figures before it stay in
the block as `before_stale_distractor_fix`.

    vla eval runs/s20/cam/<c_g04pc|c_vis>_sN/train/checkpoints/step_00007000 episodes=200 seed_range=report \\
        temporal_ensemble=0.3 temporal_ensemble_every=2 n_action_steps=4 runtime=onnx videos=0 perturb=realistic \\
        out_dir=<the folders in PAIRS>                 (runs/s22/q_rerun.sh, q_rerun2.sh)
    python benchmarks/camera_recipe_change.py
"""

from __future__ import annotations

import json
from pathlib import Path

from results_io import RESULTS

from sim.evaluate import seed_outcomes
from vla.metrics import paired_difference

# (base, new) per training seed
PAIRS = [("runs/s20/rep_cbase_realistic", "runs/s20/rob_cam_vis/realistic"),
         ("runs/s21/rep_cam1/c_g04pc/realistic", "runs/s21/rep_cam1/c_vis/realistic")]


def main() -> None:
    path = RESULTS / "robustness.json"
    data = json.loads(path.read_text())
    block = data["camera_only_recipe_change"]
    base, new, per = {}, {}, []
    for t, (a, b) in enumerate(PAIRS):
        oa = seed_outcomes(json.loads(Path(a, "summary.json").read_text()))
        ob = seed_outcomes(json.loads(Path(b, "summary.json").read_text()))
        per.append({"base": sum(oa.values()) / len(oa), "new": sum(ob.values()) / len(ob)})
        for s in oa:
            base[(t, s)], new[(t, s)] = oa[s], ob[s]
    d = paired_difference(base, new)
    old = block["realistic"]
    block["realistic"] = {"per_training": per,
                          "pooled_minus_base": {"mean": round(d["mean"], 3), "lo": round(d["lo"], 3),
                                                "hi": round(d["hi"], 3), "pairs": len(base), "better": d["better"],
                                                "worse": d["worse"]},
                          "before_stale_distractor_fix": old.get("before_stale_distractor_fix", old)}
    path.write_text(json.dumps(data, indent=1))
    print(json.dumps(block["realistic"]))


if __name__ == "__main__":
    main()
