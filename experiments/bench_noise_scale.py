"""How much does the flow's initial noise cost a trained policy? One checkpoint evaluated at several
`noise_scale`s (x0 = scale * N(0, I); 0 starts every chunk from the prior's mean) on the same seeds,
differences paired by seed against the learnt distribution (scale 1).

  PYTHONPATH=benchmarks python experiments/bench_noise_scale.py --ckpt runs/main18/train/checkpoints/step_00007000 \
      --out runs/noise_exp --scales 1,0.5,0 --episodes 100 --seed-start 2000

The checkpoint above is a `make run` (the main job) pretrained policy: camera pick_place,
7,000 steps. Seeds 2000+ are not the job's evaluation seeds (1000-1049), so the job's own figure is
a held-out check of the scale chosen here. Writes experiments/results/noise_scale.{md,json}.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from harness import ROOT, sh, vla


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--out", default="runs/noise_exp")
    ap.add_argument("--scales", default="1,0.5,0")
    ap.add_argument("--task", default="pick_place")
    ap.add_argument("--episodes", type=int, default=100)
    ap.add_argument("--seed-start", type=int, default=2000)
    ap.add_argument("--n-action-steps", type=int, default=4)
    ap.add_argument("--image-size", type=int, default=84)
    args = ap.parse_args()

    from sim.evaluate import read_seed_outcomes
    from vla.metrics import paired_difference

    out = Path(args.out).resolve()
    scales = args.scales.split(",")
    for s in scales:  # finished evaluations are reused
        dest = out / f"scale_{s}"
        if not (dest / "summary.json").exists():
            sh(vla("eval", args.ckpt, f"task={args.task}", f"episodes={args.episodes}",
                   "seed_range=collect", f"seed_offset={args.seed_start}", "workers=2",
                   f"n_action_steps={args.n_action_steps}",
                   f"image_size={args.image_size}", "videos=0", f"noise_scale={s}", f"out_dir={dest}"),
               out / "logs" / f"eval_scale_{s}.log")
    summaries = {s: json.loads((out / f"scale_{s}" / "summary.json").read_text()) for s in scales}
    outcomes = {s: read_seed_outcomes(out / f"scale_{s}") for s in scales}
    res: dict[str, Any] = {"checkpoint": args.ckpt, "task": args.task, "episodes": args.episodes,
                           "seed_start": args.seed_start, "n_action_steps": args.n_action_steps,
                           "success": {s: summaries[s]["success_rate"] for s in scales},
                           "steps_to_success": {s: summaries[s]["steps_to_success"] for s in scales}}
    lines = ["# The flow's initial noise at inference (`policy.noise_scale`)", "",
             f"Checkpoint `{args.ckpt}` ({args.task}), {args.episodes} seeds from {args.seed_start}, re-planning "
             f"every {args.n_action_steps} steps; the same seeds for every scale. Command: the docstring of "
             "`experiments/bench_noise_scale.py`.", "",
             "| noise_scale | success | Wilson 95% | steps to success | minus scale 1, paired by seed (95% t) |",
             "|---|---|---|---|---|"]
    ref = "1" if "1" in scales else scales[0]
    for s in scales:
        sm = summaries[s]
        diff = ""
        if s != ref:
            d = paired_difference(outcomes[ref], outcomes[s])
            res[f"scale_{s}_minus_{ref}"] = d
            diff = f"{d['mean']:+.2f} [{d['lo']:+.2f}, {d['hi']:+.2f}] ({d['better']} better / {d['worse']} worse)"
        lines.append(f"| {s} | {sm['success_rate']:.2f} | [{sm['wilson95'][0]:.2f}, {sm['wilson95'][1]:.2f}] | "
                     f"{sm['steps_to_success']:.1f} | {diff} |")
    (ROOT / "experiments" / "results" / "noise_scale.json").write_text(json.dumps(res, indent=1))
    (ROOT / "experiments" / "results" / "noise_scale.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
