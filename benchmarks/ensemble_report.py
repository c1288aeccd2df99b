"""The temporal ensemble against plain chunk execution on the protocol's report seeds, over trainings.

    python benchmarks/ensemble_report.py --jobs runs/main58 runs/main58s1 runs/main58s2

The ensemble's rate (0.3) and stride (a chunk every 2 steps) were chosen on the job's old seeds 1000-1199
(bench_ensemble.py, ensemble.md); this measures the choice where nothing was chosen. For each finished job
its eval stage already ran the pretrained checkpoint with the ensemble on the report range
(`<job>/eval_<eval.runtime>`: eval_torch before the option); this runs the same checkpoint, seeds and settings
executing 4 steps of each chunk (`n_action_steps=4`, the job's setting before the ensemble) into
`<job>/eval_plain4`, and pairs the two by seed. Over the jobs (one training each): the mean of the per-job
differences with its t interval, and
every seed pair pooled. Written by results_io.write_result to benchmarks/results/ensemble_report.json.
Resumable: an evaluation with a summary is not run again.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from harness import job_eval
from results_io import write_result

from sim.evaluate import seed_outcomes
from vla.metrics import paired_difference, t_interval

ROOT = Path(__file__).resolve().parents[1]


def plain_of(job: Path) -> dict[str, Any]:
    """The eval stage's evaluation again, executing 4 steps of each chunk (no ensemble)."""
    from sim.evaluate import EvalConfig, run_evaluation

    out = job / "eval_plain4"
    if (out / "summary.json").exists():
        return json.loads((out / "summary.json").read_text())
    config = dict(json.loads((job_eval(job) / "summary.json").read_text())["config"])
    config.update(temporal_ensemble=None, temporal_ensemble_every=1, n_action_steps=4, videos=0, out_dir=str(out),
                  record="")
    return run_evaluation(EvalConfig(**config))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", nargs="+", required=True, help="finished jobs whose eval stage used the ensemble")
    args = ap.parse_args()
    rows, ranges = [], set()
    for j in args.jobs:
        job = (ROOT / j).resolve()
        ens = json.loads((job_eval(job) / "summary.json").read_text())
        if ens["config"].get("temporal_ensemble") is None:
            raise SystemExit(f"{job}: its eval stage ran without the temporal ensemble")
        plain = plain_of(job)
        ranges.add(ens.get("seed_range", "collect"))
        d = paired_difference(seed_outcomes(plain), seed_outcomes(ens))
        rows.append({"job": j, "plain": plain["success_rate"], "ensemble": ens["success_rate"],
                     "ensemble_minus_plain": d, "per_seed_plain": [e["success"] for e in plain["episodes_detail"]],
                     "per_seed_ensemble": [e["success"] for e in ens["episodes_detail"]]})
        print(f"{j}: plain {plain['success_rate']:.3f}, ensemble {ens['success_rate']:.3f}, "
              f"ensemble - plain {d['mean']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}]")
    per_job = np.array([r["ensemble_minus_plain"]["mean"] for r in rows])
    lo, hi = t_interval(per_job)
    pooled = np.concatenate([np.asarray(r["per_seed_ensemble"], float) - np.asarray(r["per_seed_plain"], float)
                             for r in rows])
    plo, phi = t_interval(pooled)
    ens_cfg = json.loads((job_eval(ROOT / args.jobs[0]) / "summary.json").read_text())["config"]
    figures = {"rate": ens_cfg["temporal_ensemble"], "every": ens_cfg["temporal_ensemble_every"], "jobs": rows,
               "over_trainings": {"mean": float(per_job.mean()), "lo": lo, "hi": hi, "trainings": len(rows)},
               "pooled_episodes": {"mean": float(pooled.mean()), "lo": plo, "hi": phi, "pairs": len(pooled)}}
    o, q = figures["over_trainings"], figures["pooled_episodes"]
    lines = ["# The temporal ensemble against plain execution, on the report range", "",
             f"Command: `python benchmarks/ensemble_report.py --jobs {' '.join(args.jobs)}`. Each job's pretrained "
             f"checkpoint on its eval stage's 200 seeds (the protocol's {'/'.join(sorted({ens['seed_range']}))} "
             f"range): the ensemble at rate {figures['rate']}, a chunk every {figures['every']} steps, against 4 "
             "steps of each chunk. Paired by seed, 95% t interval. What was chosen where: the rate and the stride "
             "were chosen on seeds 1000-1199 (now inside `collect`; bench_ensemble.py, ensemble.md); nothing on "
             "`report`.", "", "| job | plain | ensemble | ensemble - plain (better / worse) |", "|---|---|---|---|"]
    for r in rows:
        d = r["ensemble_minus_plain"]
        lines.append(f"| {r['job']} | {r['plain']:.3f} | {r['ensemble']:.3f} | {d['mean']:+.3f} "
                     f"[{d['lo']:+.3f}, {d['hi']:+.3f}] ({d['better']} / {d['worse']}) |")
    lines += ["", f"Over the {o['trainings']} trainings: {o['mean']:+.3f} [{o['lo']:+.3f}, {o['hi']:+.3f}]; pooled "
                  f"over {q['pairs']} seed pairs: {q['mean']:+.3f} [{q['lo']:+.3f}, {q['hi']:+.3f}]."]
    (ROOT / "benchmarks" / "results" / "ensemble_report.md").write_text("\n".join(lines) + "\n")
    write_result("ensemble_report", figures, seed_range=next(iter(ranges)) if len(ranges) == 1 else "collect",
                 key_figures=["over_trainings", "pooled_episodes", "rate", "every"])
    print("\n".join(lines))


if __name__ == "__main__":
    main()
