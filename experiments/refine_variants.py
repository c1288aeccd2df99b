"""The main job's refine round trained again with other settings on the same data
(`benchmarks/results/main_job_notes.md`): is the round's gain the method's, or fine-tuning's churn?

    python experiments/refine_variants.py [--job runs/main20] [--src runs/main20b/refine] [--out runs/rstudy]

Needs a job run and a copy of it whose refine round collected 40 rollouts:
    vla run out_dir=runs/main20 ; cp -r runs/main20 runs/main20b
    vla run out_dir=runs/main20b overwrite=false "stages=[refine]" refine.episodes_per_iteration=40
Each variant copies those rollouts and the version-0 evaluation (the policy samples at noise 0, so
collecting again would give the same episodes), fine-tunes 500 steps as the job does, evaluates on
the job's seeds 1000-1049 and is paired by seed with the pretrained policy and the control.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from vla.metrics import paired_difference

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {"share10": ("method_args.group_shares={demo: 0.9, correction: 0.1}",),
            "control": ("method_args.group_shares={demo: 1.0}",),  # the same steps on the demos alone
            "prop_seed1": ("seed=1",)}  # the job's settings, another training seed


def per_seed(summary: Path) -> dict[int, float]:
    return {int(e["seed"]): float(e["success"]) for e in json.loads(summary.read_text())["episodes_detail"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--job", default="runs/main20")
    ap.add_argument("--src", default="runs/main20b/refine")
    ap.add_argument("--out", default="runs/rstudy")
    args = ap.parse_args()
    job, src, out = (ROOT / args.job), (ROOT / args.src), (ROOT / args.out)
    for name, overrides in VARIANTS.items():
        d = out / name
        if (d / "iter_01" / "eval" / "summary.json").exists():
            continue
        (d / "iter_00").mkdir(parents=True, exist_ok=True)
        for part in ("store.zarr", "iter_00/eval"):
            if not (d / part).exists():
                shutil.copytree(src / part, d / part)
        t = time.time()
        cmd = [sys.executable, "-m", "vla.cli", "refine", "hg-dagger", "--ckpt",
               str(job / "train/checkpoints/step_00007000"), "--demos", str(job / "demos.zarr"), "--out", str(d),
               "iterations=1", "episodes_per_iteration=40", "eval_episodes=50", "n_action_steps=4",
               "eval_seed_range=collect", "eval_seed_offset=1000", "train.steps=500", "train.ckpt_every=500",
        "videos=0", *overrides]
        with open(out / f"{name}.log", "w") as f:
            code = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT).returncode
        print(f"[{time.strftime('%H:%M:%S')}] {name}: exit {code}, {time.time() - t:.0f} s", flush=True)
    base = per_seed(src / "iter_00/eval/summary.json")
    runs = {"job (training seed 0)": src / "iter_01/eval/summary.json",
            **{n: out / n / "iter_01/eval/summary.json" for n in VARIANTS}}
    res = {n: per_seed(p) for n, p in runs.items() if p.exists()}
    for name, r in res.items():
        d = paired_difference(base, r)
        line = (f"{name:22s} {np.mean([r[s] for s in sorted(base)]):.2f}  minus pretrained {d['mean']:+.2f} "
                f"[{d['lo']:+.2f}, {d['hi']:+.2f}]  better {d['better']} / worse {d['worse']}")
        if "control" in res and name != "control":
            c = paired_difference(res["control"], r)
            line += f"  minus control {c['mean']:+.2f} [{c['lo']:+.2f}, {c['hi']:+.2f}]"
        print(line)


if __name__ == "__main__":
    main()
