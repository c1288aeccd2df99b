"""Learning benchmark: pretrain the `tiny` VLA on scripted demos of Lift and Can together
(language-conditioned, two 84x84 cameras + proprio) on this CPU within a time budget, then
evaluate on 50 held-out seeds per task.

Usage: python benchmarks/bench_learning.py [--demos 200] [--minutes 45] [--out-dir runs/bench_learning]
Writes benchmarks/results/learning.md (figures + the command).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "learning.md"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default="lift,can")
    ap.add_argument("--demos", type=int, default=200, help="expert demos per task (seeds 0..N-1)")
    ap.add_argument("--eval-episodes", type=int, default=50, help="held-out seeds 1000.. per task")
    ap.add_argument("--minutes", type=float, default=45.0, help="training time budget")
    ap.add_argument("--steps", type=int, default=15000, help="schedule length (training stops at the budget)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out-dir", type=Path, default=Path("runs/bench_learning"))
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    from sim.evaluate import EvalConfig, run_evaluation
    from vla.data.store import EpisodeStore
    from vla.policy.model import VLAModel, count_parameters
    from vla.train.pretrain import build
    from vla.train.trainer import Trainer, latest_checkpoint

    tasks = args.tasks.split(",")
    store_path = args.out_dir / "demos.zarr"
    collect: dict[str, dict] = {}
    t0 = time.perf_counter()
    for task in tasks:
        have = 0
        if (store_path / "zarr.json").exists():
            have = len(EpisodeStore.open(store_path).select(task=task))
        if have < args.demos:
            s = run_evaluation(EvalConfig(task=task, policy="expert", episodes=args.demos - have,
                                          seed_range="collect", seed_offset=have,
                                          workers=args.workers, videos=0, source="demo", record=str(store_path),
                                          out_dir=str(args.out_dir / f"collect_{task}")))
            collect[task] = {"expert_success": s["success_rate"], "mean_length": s["length_mean"]}
    collect_s = time.perf_counter() - t0

    policy_cfg, train_cfg, train_ds, val_ds, stats = build(
        store_path, "tiny", "default", [f"train.steps={args.steps}", f"train.batch_size={args.batch_size}",
                                        "train.val_every=1000", "train.ckpt_every=1000", "train.num_workers=2",
                                        "data.success_only=true", "data.val_fraction=0.05"])
    model = VLAModel(policy_cfg, stats)
    train_dir = args.out_dir / "train"
    trainer = Trainer(model, train_ds, train_cfg, train_dir, stats, val_ds)
    if latest_checkpoint(train_dir) is not None:
        trainer.resume()
    t0 = time.perf_counter()
    budget = args.minutes * 60
    losses: dict[int, float] = {}
    while trainer.step < train_cfg.steps and time.perf_counter() - t0 < budget:
        result = trainer.fit(steps=min(trainer.step + 500, train_cfg.steps))
        losses.update(result.losses)
    checkpoint = trainer.save()
    train_s = time.perf_counter() - t0

    evals: dict[str, dict] = {}
    for task in tasks:
        s = run_evaluation(EvalConfig(task=task, policy=str(checkpoint), episodes=args.eval_episodes,
                                      seed_range="collect", seed_offset=1000,
                                      workers=args.workers, videos=2, out_dir=str(args.out_dir / f"eval_{task}")))
        evals[task] = s
    steps_done = trainer.step
    lines = ["# Learning benchmark: tiny VLA on Lift + Can (CPU)", "",
             f"Command: `python {' '.join(['benchmarks/bench_learning.py', *sys.argv[1:]])}`", "",
             f"Machine: {os.cpu_count()} CPUs (shared with other work during the run: load average "
             f"{os.getloadavg()[0]:.1f} at the end). Demos: {args.demos} per task from the scripted experts "
             f"(seeds 0..{args.demos - 1}), cameras agentview + robot0_eye_in_hand at 84x84 (policy input 64x64) "
             "+ proprio, one language-conditioned policy for both tasks.", "",
             f"- demo collection: {collect_s / 60:.1f} min " + json.dumps(collect),
             f"- policy: tiny, {count_parameters(model) / 1e6:.2f}M trainable parameters",
             f"- training: {steps_done} steps x batch {args.batch_size} in {train_s / 60:.1f} min "
             f"(budget {args.minutes} min, cosine schedule over {args.steps} steps), "
             f"loss {next(iter(losses.values())) if losses else float('nan'):.3f} -> "
             f"{list(losses.values())[-1] if losses else float('nan'):.3f}",
             f"- checkpoint: `{checkpoint}`", "",
             "| task | success (held-out seeds 1000..) | Wilson 95% | mean length | target |", "|---|---|---|---|---|"]
    targets = {"lift": ">= 90%", "can": ">= 60%"}
    for task, s in evals.items():
        lo, hi = s["wilson95"]
        lines.append(f"| {task} | {s['successes']}/{s['episodes']} = {s['success_rate']:.0%} | [{lo:.0%}, {hi:.0%}] | "
                     f"{s['length_mean']:.0f} | {targets.get(task, '')} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
