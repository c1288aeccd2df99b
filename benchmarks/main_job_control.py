"""The main job's refine stage against its demos-only control, over training seeds.

    python benchmarks/main_job_control.py --jobs runs/main56 runs/main56s1 [--name main_job_control]

For each finished job (`vla run`, the default preset or a copy with other training seeds) this runs
the equal-compute control of its refine stage: the same config (`<job>/refine/config.json`: rounds,
rollouts with the simulated person, fine-tuning steps, seed), with `method_args.group_shares={demo: 1.0}`, so every
fine-tuning batch is drawn from the demos alone and the rollouts are collected but not learnt from.
Version 0's evaluation is the job's (copied), so the control costs the rollouts, the fine-tuning and one
evaluation per round. Written: `<job>/refine_control/`, and `benchmarks/results/<name>.json` / `.md`:
per job and round the success, refined minus pretrained, control minus pretrained and refined minus
control (paired by seed, 95% t interval), and over the jobs the mean of the per-job differences with a
t interval (each job is one training seed) and the 200-seed pairs pooled.

A second training seed of the job (pretraining and refinement; the demos and the evaluation seeds stay):
    vla run out_dir=runs/main56s1 "stages=[sim_demos,stats,pretrain,export,eval,refine]" \\
        'pretrain.overrides=["train.lr=1e-3","policy.noise_scale=0","train.seed=1"]' \\
        'refine.overrides=["train.ema_decay=0.999","train.ema_warmup=false","seed=1"]'
(refine's training seed is seed x 1000 + round); seed 2 the same with 2. The runs/main56 control
is runs/h1's, copied: the same preset without the lerobot, loader and deploy stages, whose every
evaluation was identical to runs/main56's (the job is deterministic on this machine).
Resumable: a control whose last round is evaluated is not run again.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
from results_io import write_result

from vla.metrics import format_paired, paired_difference, t_interval
from vla.protocol import range_of_seeds

ROOT = Path(__file__).resolve().parents[1]

RESULTS = ROOT / "benchmarks" / "results"


def outcomes(summary: Path) -> dict[int, bool]:
    from sim.evaluate import seed_outcomes

    return seed_outcomes(json.loads(summary.read_text()))


def run_control(job: Path) -> Path:
    """The demos-only control of `job`'s refine stage, in `<job>/refine_control`."""
    from vla.config import load_config
    from vla.refine.config import RefineConfig
    from vla.refine.loop import RefineRun

    values: dict[str, Any] = json.loads((job / "refine" / "config.json").read_text())
    out = job / "refine_control"
    if (out / f"iter_{values['iterations']:02d}" / "eval" / "summary.json").exists():
        return out
    values.update(out_dir=str(out), method_args={"group_shares": {"demo": 1.0}}, videos=0)
    v0 = out / "iter_00" / "eval"
    if not v0.exists():
        shutil.copytree(job / "refine" / "iter_00" / "eval", v0)
    RefineRun(load_config(RefineConfig, "refine", "default", [], values=values)).run()
    return out


def compare(job: Path) -> dict[str, Any]:
    rounds = json.loads((job / "refine" / "config.json").read_text())["iterations"]
    base = outcomes(job / "refine" / "iter_00" / "eval" / "summary.json")
    row: dict[str, Any] = {"job": str(job.relative_to(ROOT) if job.is_relative_to(ROOT) else job),
                           "seed_range": range_of_seeds(base), "pretrained": float(np.mean(list(base.values()))),
                           "rounds": {}}
    for k in range(1, rounds + 1):
        ref = outcomes(job / "refine" / f"iter_{k:02d}" / "eval" / "summary.json")
        ctl = outcomes(job / "refine_control" / f"iter_{k:02d}" / "eval" / "summary.json")
        row["rounds"][str(k)] = {
            "refined": float(np.mean(list(ref.values()))), "control": float(np.mean(list(ctl.values()))),
            "refined_minus_pretrained": paired_difference(base, ref),
            "control_minus_pretrained": paired_difference(base, ctl),
            "refined_minus_control": paired_difference(ctl, ref),
            "per_seed": {"pretrained": [base[s] for s in sorted(base)], "refined": [ref[s] for s in sorted(base)],
                         "control": [ctl[s] for s in sorted(base)]}}
    return row


def pooled(rows: list[dict[str, Any]], k: str) -> dict[str, Any]:
    """Over the jobs (training seeds): the mean of the per-job refined-minus-control with its t interval,
    and all seed pairs pooled."""
    per_job = np.array([r["rounds"][k]["refined_minus_control"]["mean"] for r in rows])
    diffs = np.concatenate([np.asarray(r["rounds"][k]["per_seed"]["refined"], float)
                            - np.asarray(r["rounds"][k]["per_seed"]["control"], float) for r in rows])
    lo, hi = t_interval(per_job)
    plo, phi = t_interval(diffs)
    gain = np.array([r["rounds"][k]["refined_minus_pretrained"]["mean"] for r in rows])
    glo, ghi = t_interval(gain)
    return {"trainings": len(rows), "refined_minus_control_per_job": per_job.tolist(),
            "refined_minus_control": {"mean": float(per_job.mean()), "lo": lo, "hi": hi},
            "refined_minus_control_pooled": {"mean": float(diffs.mean()), "lo": plo, "hi": phi, "pairs": len(diffs)},
            "refined_minus_pretrained": {"mean": float(gain.mean()), "lo": glo, "hi": ghi}}


def report(rows: list[dict[str, Any]], name: str) -> None:
    rounds = sorted(set.intersection(*(set(r["rounds"]) for r in rows)), key=int)
    out: dict[str, Any] = {"jobs": rows, "over_jobs": {k: pooled(rows, k) for k in rounds}}
    # the headline: the last round's refined - control over the trainings, and its pooled pairs
    last = out["over_jobs"][rounds[-1]]
    out |= {"refined_minus_control": last["refined_minus_control"],
            "refined_minus_control_pooled": last["refined_minus_control_pooled"], "trainings": len(rows)}
    ranges = {r["seed_range"] for r in rows}
    write_result(name, out, seed_range=ranges.pop() if len(ranges) == 1 else "collect",
                 key_figures=["refined_minus_control", "refined_minus_control_pooled", "trainings"],
                 command=f"python benchmarks/main_job_control.py --jobs {' '.join(r['job'] for r in rows)} "
                         f"--name {name}")
    lines = ["# The main job's refine stage against its demos-only control", "",
             f"Command: `python benchmarks/main_job_control.py --jobs {' '.join(r['job'] for r in rows)} "
             f"--name {name}`. "
             "Each job is one training seed of the default preset (pretraining and refinement). The control "
             "repeats the job's refine stage (the same rounds, rollouts with the simulated person, fine-tuning "
             "steps and seed) with every batch from the demos (`method_args.group_shares={demo: 1.0}`). The job's 200 "
             f"evaluation seeds (the protocol's {'/'.join(sorted({r['seed_range'] for r in rows}))} range), "
             "paired by seed, 95% t interval, (seeds better / worse). What was chosen where: the refine stage's "
             "settings (rounds, rollouts, steps, EMA) were chosen on the job's old seeds 1000-1199, now inside "
             "`collect`; nothing was chosen on `report`.", "",
             "| job | round | pretrained | refined | control | refined - pretrained | control - pretrained "
             "| refined - control |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        for k, v in r["rounds"].items():
            lines.append(f"| {r['job']} | {k} | {r['pretrained']:.3f} | {v['refined']:.3f} | {v['control']:.3f} | "
                         f"{format_paired(v['refined_minus_pretrained'])} | "
                         f"{format_paired(v['control_minus_pretrained'])} | "
                         f"{format_paired(v['refined_minus_control'])} |")
    lines += ["", "Over the trainings (t interval over the per-job differences; NaN with one job):", ""]
    for k, p in out["over_jobs"].items():
        m, q, g = p["refined_minus_control"], p["refined_minus_control_pooled"], p["refined_minus_pretrained"]
        each = ", ".join(f"{x:+.3f}" for x in p["refined_minus_control_per_job"])
        lines.append(f"- round {k}, {p['trainings']} trainings: refined - control {m['mean']:+.3f} "
                     f"[{m['lo']:+.3f}, {m['hi']:+.3f}] (per job {each}; "
                     f"pooled over {q['pairs']} pairs {q['mean']:+.3f} [{q['lo']:+.3f}, {q['hi']:+.3f}]); "
                     f"refined - pretrained {g['mean']:+.3f} [{g['lo']:+.3f}, {g['hi']:+.3f}]")
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", nargs="+", required=True, help="finished job folders (with refine/)")
    ap.add_argument("--name", default="main_job_control", help="benchmarks/results/<name>.json / .md")
    ap.add_argument("--no-run", action="store_true", help="only compare controls already run")
    args = ap.parse_args()
    jobs = [(ROOT / j).resolve() for j in args.jobs]
    for job in jobs:
        if not (job / "refine" / "config.json").exists():
            raise SystemExit(f"{job}: no refine/config.json (run the job's refine stage first)")
        if not args.no_run:
            run_control(job)
    report([compare(j) for j in jobs], args.name)


if __name__ == "__main__":
    main()
