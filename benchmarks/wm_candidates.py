"""Inputs of the world-model benchmark, resumable: demos, policy checkpoints spread over
real success, their real success on held-out seeds, and the rollouts the world model trains on.

  python benchmarks/wm_candidates.py --out runs/bench_wm/inputs

pick_place in state mode (the object pose is in the state, so the imagined environment can feed a
state policy). Everything is split by seed so the ranking never sees its own evaluation data:
  seeds 0..           expert demos (noise 0.1) and failed expert attempts (skill 0.5): training data
  seeds 5000..        rollouts of every candidate (world-model training data: failures, near misses)
  seeds 100000..      held-out: each candidate's real success (>= 50 episodes, recorded), and the
                      real start states of the ranking.
Candidates: checkpoints of two pretraining runs (100 and 15 demos) at several training lengths.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness import STATE, sh, vla

# the world model's rollouts come from these runs only: a run added later (d15long) must not change its data
WM_RUNS = ("d100", "d15")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/bench_wm/inputs")
    ap.add_argument("--demos", type=int, default=100)
    ap.add_argument("--small-demos", type=int, default=15)
    ap.add_argument("--steps", default="250,500,1000,2000,3000", help="checkpoints of the 100-demo run")
    ap.add_argument("--small-steps", default="1000,3000")
    ap.add_argument("--long-steps", default="6000", help="d15long: the 15 demos, one longer schedule (HABC's "
                    "converged base)")
    ap.add_argument("--eval-episodes", type=int, default=50)
    ap.add_argument("--rollout-episodes", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--runs", default="d100,d15", help="pretraining runs to build (HABC's base needs d15 only; "
                    "d15long: its converged base)")
    args = ap.parse_args()
    out = Path(args.out).resolve()
    logs = out / "logs"
    w = f"workers={args.workers}"
    demos, failed = out / "demos.zarr", out / "expert_failures.zarr"
    runs = {"d100": (args.demos, [int(s) for s in args.steps.split(",")]),
            "d15": (args.small_demos, [int(s) for s in args.small_steps.split(",")]),
            "d15long": (args.small_demos, [int(s) for s in args.long_steps.split(",")])}
    unknown = set(args.runs.split(",")) - set(runs)
    if unknown:
        ap.error(f"--runs: unknown run {sorted(unknown)[0]!r} (valid: {', '.join(runs)})")
    runs = {k: v for k, v in runs.items() if k in args.runs.split(",")}
    if "d100" in runs:  # the 100-demo store and the expert failures (the world model's data)
        if not (out / "demos.done").exists():
            sh(vla("sim", "collect", str(demos), "task=pick_place", f"episodes={args.demos}", "seed_range=collect",
                   "seed_offset=0", w,
                   "noise=0.1", f"out_dir={out / 'collect'}", *STATE), logs / "collect_demos.log")
            (out / "demos.done").touch()
        if not (out / "failures.done").exists():
            sh(vla("sim", "collect", str(failed), "task=pick_place", "episodes=30", "seed_range=collect",
                   "seed_offset=2000", w,
                   "noise=0.3", "skill=0.5", f"out_dir={out / 'collect_fail'}", *STATE), logs / "collect_failures.log")
            (out / "failures.done").touch()
    wm_cands: set[str] = set()  # candidates whose rollouts go into the world model's data
    cands: dict[str, Path] = {}
    for name, (n_demos, steps) in runs.items():
        run = out / "pretrain" / name
        store = demos
        if n_demos < args.demos:  # the first n demos only: a small store of its own
            store = out / f"demos_{n_demos}.zarr"
            if not (out / f"demos_{n_demos}.done").exists():
                sh(vla("sim", "collect", str(store), "task=pick_place", f"episodes={n_demos}", "seed_range=collect",
                       "seed_offset=0", w,
                       "noise=0.1", f"out_dir={out / 'collect_small'}", *STATE), logs / f"collect_{n_demos}.log")
                (out / f"demos_{n_demos}.done").touch()
        if not (run / "done").exists():
            # ckpt every 250 steps, all kept: the candidates are some of them
            sh(vla("train", str(store), "--out", str(run), "--policy", "tiny", "--train", "default", "--resume",
                   f"train.steps={max(steps)}", "train.batch_size=64", "train.warmup_steps=100",
                   "train.ckpt_every=250", "train.keep_checkpoints=0", "train.progress=false",
                   "train.val_every=100000"), logs / f"pretrain_{name}.log")
            (run / "done").touch()
        for s in steps:
            cands[f"{name}_s{s}"] = run / "checkpoints" / f"step_{s:08d}"
            if name in WM_RUNS:
                wm_cands.add(f"{name}_s{s}")
    real: dict[str, float] = {}
    for name, ck in cands.items():
        ev = out / "eval" / name
        if not (ev / "summary.json").exists():
            sh(vla("eval", str(ck), "task=pick_place", f"episodes={args.eval_episodes}", "seed_range=collect",
                   "seed_offset=100000", w,
                   f"record={out / 'heldout' / (name + '.zarr')}", f"out_dir={ev}", *STATE), logs / f"eval_{name}.log")
        real[name] = json.loads((ev / "summary.json").read_text())["success_rate"]
        ro = out / "rollouts" / name
        if name in wm_cands and not (ro / "summary.json").exists():
            sh(vla("eval", str(ck), "task=pick_place", f"episodes={args.rollout_episodes}", "seed_range=collect",
                   "seed_offset=5000", w,
                   f"record={out / 'rollouts.zarr'}", f"out_dir={ro}", *STATE), logs / f"rollouts_{name}.log")
        print(f"{name}: real success {real[name]:.2f}", flush=True)
    # merged into what earlier calls wrote: `--runs d15long` adds a base without dropping d15's
    path = out / "candidates.json"
    table = json.loads(path.read_text()) if path.exists() else {}
    table.update({n: {"ckpt": str(c), "real_success": real[n], "heldout": str(out / "heldout" / f"{n}.zarr")}
                  for n, c in cands.items()})
    path.write_text(json.dumps(table, indent=1))
    print(f"wrote {out / 'candidates.json'}")


if __name__ == "__main__":
    main()
