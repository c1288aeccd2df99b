"""A recipe change read on the report range, pooled over its trainings: each training's new policy (or estimator)
paired per seed with the recipe before's of the same training seed, on the same 200 report seeds.

Without arguments: robustness.json's `camera_only_recipe_change` under `realistic` (visual domain randomisation,
c_vis, against the recipe before, c_g04pc). Re-run after the stale-distractor fix (4f9f51c); the figures before it
stay in the block as `before_stale_distractor_fix`.

    vla eval runs/s20/cam/<c_g04pc|c_vis>_sN/train/checkpoints/step_00007000 episodes=200 seed_range=report \\
        temporal_ensemble=0.3 temporal_ensemble_every=2 n_action_steps=4 runtime=onnx videos=0 perturb=realistic \\
        out_dir=<the folders in PAIRS>                 (runs/s22/q_rerun.sh, q_rerun2.sh)
    python benchmarks/recipe_change.py

With `--block NAME --pair BASE NEW ...` (bench_robustness.py run folders, one pair per training seed): every
condition run in all of them (clean, each kind, realistic), per training and pooled over the pairs, into
robustness.json's block NAME, e.g. the latency trained in (c_visl against c_vis, 2026-12-07):

    python benchmarks/recipe_change.py --block camera_only_latency_change --what "..." \\
        --pair runs/s20/rob_cam_vis runs/s23/rob_cam_lat0 --pair runs/s21/rob_cam_vis1 runs/s23/rob_cam_lat1

or the job's bigger estimator recipe over three estimator trainings, each against the one estimator before (the same
refined policy; runs/s23/q_jobbig.sh, q_jobbig12.sh):

    python benchmarks/recipe_change.py --block job_estimator_recipe_change --what "..." \
        --pair runs/s19/rob_job runs/s23/rob_job_big --pair runs/s19/rob_job runs/s23/rob_job_big_s1 \
        --pair runs/s19/rob_job runs/s23/rob_job_big_s2
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench_robustness import write_page
from results_io import RESULTS, write_result

from sim.evaluate import read_seed_outcomes
from vla.metrics import paired_difference

# (base, new) per training seed
PAIRS = [("runs/s20/rep_cbase_realistic", "runs/s20/rob_cam_vis/realistic"),
         ("runs/s21/rep_cam1/c_g04pc/realistic", "runs/s21/rep_cam1/c_vis/realistic")]


def pooled(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Each pair's success rates and the paired difference over every (training, seed) pair. Where one base
    folder stands in several pairs (one base policy against several trainings) its outcomes count once per pair,
    so the interval is narrower than one over trainings of both recipes."""
    base, new, per = {}, {}, []
    for t, (a, b) in enumerate(pairs):
        oa, ob = read_seed_outcomes(Path(a)), read_seed_outcomes(Path(b))
        for folder, got in ((a, oa), (b, ob)):
            if got is None:
                raise SystemExit(f"{folder}: no summary.json (that evaluation has not run)")
        if set(oa) != set(ob):
            raise SystemExit(f"{a} and {b}: not the same seeds ({len(oa)} against {len(ob)})")
        per.append({"base": sum(oa.values()) / len(oa), "new": sum(ob.values()) / len(ob)})
        for s in oa:
            base[(t, s)], new[(t, s)] = oa[s], ob[s]
    d = paired_difference(base, new)
    return {"per_training": per,
            "pooled_minus_base": {"mean": round(d["mean"], 3), "lo": round(d["lo"], 3), "hi": round(d["hi"], 3),
                                  "pairs": len(base), "better": d["better"], "worse": d["worse"]}}


def change_block(pairs: list[tuple[Path, Path]], what: str) -> dict[str, Any]:
    """Every condition that ran in each base and each new folder, pooled over the pairs."""
    conds = sorted(set.intersection(*[{p.parent.name for p in d.glob("*/summary.json")}
                                      for pair in pairs for d in pair]))
    if not conds:
        raise SystemExit("no condition ran in every folder of the pairs")
    block: dict[str, Any] = {"what": what, "trainings": len(pairs),
                             "runs": {f"training {t}": [str(a), str(b)] for t, (a, b) in enumerate(pairs)}}
    for c in ["clean", *[c for c in conds if c not in ("clean", "realistic")], "realistic"]:
        if c in conds:
            block[c] = pooled([(str(a / c), str(b / c)) for a, b in pairs])
    return block


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--block", default="", help="the robustness.json block to write (default: the realistic "
                    "re-run of camera_only_recipe_change)")
    ap.add_argument("--what", default="", help="what the change is, for the block")
    ap.add_argument("--pair", nargs=2, action="append", type=Path, metavar=("BASE", "NEW"), default=[],
                    help="one training seed's base and new bench_robustness.py run folders")
    ap.add_argument("--adopted", default="", help="'yes: why' or 'no: why' (recorded in the block)")
    args = ap.parse_args()
    path = RESULTS / "robustness.json"
    data = json.loads(path.read_text())
    if args.block:
        if not args.pair:
            raise SystemExit("--block needs at least one --pair BASE NEW")
        block = change_block(args.pair, args.what)
        if args.adopted:
            verdict, _, why = args.adopted.partition(":")
            if verdict.strip() not in ("yes", "no"):
                raise SystemExit(f"--adopted '{args.adopted}': write 'yes: why' or 'no: why'")
            block["adopted"], block["why"] = verdict.strip() == "yes", why.strip()
        path = write_result("robustness", {args.block: block}, seed_range="report",
                            key_figures=data.get("_meta", {}).get("key_figures"))
        write_page(json.loads(path.read_text()))
        print(json.dumps({k: v["pooled_minus_base"] for k, v in block.items() if isinstance(v, dict)
                          and "pooled_minus_base" in v}, indent=1))
        return
    block = data["camera_only_recipe_change"]
    old = block["realistic"]
    block["realistic"] = {**pooled(PAIRS), "before_stale_distractor_fix": old.get("before_stale_distractor_fix", old)}
    path.write_text(json.dumps(data, indent=1))
    write_page(data)
    print(json.dumps(block["realistic"]))


if __name__ == "__main__":
    main()
