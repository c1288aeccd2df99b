"""Refinement benchmark: HABC, RaC, HG-DAgger and the SFT / filtered-BC / AWR baselines,
several seeds, success vs env episodes and vs intervention steps.

Three phases, so the heavy one can run on a bigger machine:
  prepare  (here)   demo stores per task and demo budget (state observation mode) and the
                    instruction-embedding table (the MiniLM weights need not travel);
  run      (any)    pretrain one tiny state-only policy per (task, budget), evaluate them and keep,
                    per task, the budget whose success is nearest the middle of 20-60%; then every
                    (task, method, seed) refinement run as `vla refine` subprocesses in parallel,
                    until done or the deadline; all records -> results.json;
  report   (here)   benchmarks/results/refine.md and PNG curves from results.json.

  python benchmarks/bench_refine.py prepare --out runs/bench_refine/inputs
  python benchmarks/bench_refine.py run --inputs runs/bench_refine/inputs --out runs/bench_refine/run
  python benchmarks/bench_refine.py report --results runs/bench_refine/run/results.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("habc", "rac", "hg_dagger", "sft", "filtered_bc", "awr")
# The demos-only control and the HABC ablations (vla/refine/critics.py): run names -> (method, overrides)
VARIANTS = {"demos_only": ("hg_dagger", ["method_args.demo_share=1.0"]),  # control: more fine-tuning on the demos alone
            "habc_no_gate": ("habc", ["method_args.use_gate=false"]),
            "habc_single_critic": ("habc", ["method_args.single_critic=true"]),
            "habc_no_mask": ("habc", ["method_args.mask_interventions=false"]),
            "habc_unscaled": ("habc", ["method_args.scale_by_viability=false"]),
            # demonstrations and corrections at 3x the weight of the policy's own (critic-weighted) steps
            "habc_demo_weight3": ("habc", ["method_args.demo_weight=3.0"])}
STATE_MODE = ["obs_mode=state", "cameras=[]"]


def vla(*args: str) -> list[str]:
    return [sys.executable, "-m", "vla.cli", *args]


def prepare(args: argparse.Namespace) -> None:
    from vla.policy.checkpoint import _save_tensors  # the checkpoint's own table format
    from vla.policy.language import shared_encoder
    from vla.registry import TASKS

    out = Path(args.out)
    (out / "demos").mkdir(parents=True, exist_ok=True)
    texts: list[str] = []
    for task in args.tasks.split(","):
        texts += list(TASKS.make(task, obs_mode="state", cameras=()).unwrapped.INSTRUCTIONS)
        for k in (int(b) for b in args.budgets.split(",")):
            store = out / "demos" / f"{task}_{k}.zarr"
            if not store.exists():
                subprocess.run(vla("sim", "collect", str(store), f"task={task}", f"episodes={k}",
                                   "seed_range=collect", "seed_offset=0",
                                   f"workers={args.workers}", "videos=0", f"noise={args.noise}",
                                   f"out_dir={out / 'collect' / f'{task}_{k}'}", *STATE_MODE), check=True)
    import numpy as np
    import torch

    emb = shared_encoder().encode(texts)
    _save_tensors({"embeddings": torch.from_numpy(np.asarray(emb))}, out / "instructions.safetensors",
                  metadata={"instructions": json.dumps(texts)})
    print(f"wrote {out}")


def _pretrain(args: argparse.Namespace) -> None:
    """One pretraining (subprocess of `run`): preloads the instruction table so no encoder is needed."""
    from vla.policy.checkpoint import load_instruction_table
    from vla.policy.language import shared_encoder
    from vla.train.pretrain import run_training

    shared_encoder().preload(load_instruction_table(Path(args.inputs)))
    run_training(args.store, args.out, "tiny", "default",
                 [f"train.steps={args.steps}", "train.batch_size=64", "train.warmup_steps=100",
                  f"train.ckpt_every={args.steps}", "train.progress=false", "train.val_every=100000",
                  "train.keep_checkpoints=1"], resume=True)  # a finished pretraining is not repeated


def _run_limited(jobs: list[tuple[str, list[str], Path]], parallel: int, deadline: float, what: str,
                 env: dict[str, str]) -> dict[str, int]:
    """Run commands, at most `parallel` at a time, each logging to its own file."""
    pending, running, codes = list(jobs), {}, {}
    while pending or running:
        while pending and len(running) < parallel and time.time() < deadline:
            name, cmd, log = pending.pop(0)
            log.parent.mkdir(parents=True, exist_ok=True)
            running[name] = subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env,  # noqa: SIM115
                                             cwd=ROOT)
        for name, p in list(running.items()):
            if p.poll() is not None:
                codes[name] = p.returncode
                print(f"[{time.strftime('%H:%M:%S')}] {what} {name}: exit {p.returncode}", flush=True)
                del running[name]
        if time.time() > deadline:
            for name, p in running.items():
                p.kill()
                codes[name] = -9
                print(f"{what} {name}: stopped at the deadline", flush=True)
            running = {}
            for name, _, _ in pending:
                codes[name] = -1
            pending = []
        time.sleep(1.0)
    return codes


def run(args: argparse.Namespace) -> None:
    t_start = time.time()
    deadline = t_start + args.minutes * 60
    inputs, out = Path(args.inputs).resolve(), Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    tasks = args.tasks.split(",")
    # 1. pretrain every (task, budget) candidate
    stores = {p.name[:-5]: p for p in sorted((inputs / "demos").glob("*.zarr")) if p.name.split("_")[0] in
              {t.split("_")[0] for t in tasks}}
    budgets = set(args.budgets.split(",")) if args.budgets else None
    stores = {k: v for k, v in stores.items()
              if k.rsplit("_", 1)[0] in tasks and (budgets is None or k.rsplit("_", 1)[1] in budgets)}
    jobs = [(name, [sys.executable, __file__, "_pretrain", "--inputs", str(inputs), "--store", str(store),
                    "--out", str(out / "pretrain" / name), "--steps", str(args.pretrain_steps)],
             out / "logs" / f"pretrain_{name}.log") for name, store in stores.items()]
    _run_limited(jobs, args.parallel, deadline, "pretrain", env)
    # 2. evaluate the candidates, choose one per task
    from vla.train.trainer import latest_checkpoint

    cands = {name: latest_checkpoint(out / "pretrain" / name) for name in stores}
    jobs = [(name, vla("eval", str(ck), f"task={name.rsplit('_', 1)[0]}", f"episodes={args.eval_episodes}",
                       "seed_range=collect", "seed_offset=100000", "workers=1", "videos=0",
                       f"out_dir={out / 'pretrain' / name / 'eval'}",
                       *STATE_MODE), out / "logs" / f"eval_{name}.log") for name, ck in cands.items()
            if ck and not (out / "pretrain" / name / "eval" / "summary.json").exists()]
    _run_limited(jobs, args.parallel, deadline, "eval", env)
    chosen: dict[str, dict[str, Any]] = {}
    for name in cands:
        f = out / "pretrain" / name / "eval" / "summary.json"
        if not f.exists():
            continue
        s = json.loads(f.read_text())
        task = name.rsplit("_", 1)[0]
        score = abs(s["success_rate"] - 0.4)
        if task not in chosen or score < chosen[task]["score"]:
            chosen[task] = {"candidate": name, "score": score, "success_rate": s["success_rate"],
                            "ckpt": str(cands[name]), "demos": str(stores[name]), "summary": str(f)}
    candidates = {name: json.loads((out / "pretrain" / name / "eval" / "summary.json").read_text())["success_rate"]
                  for name in cands if (out / "pretrain" / name / "eval" / "summary.json").exists()}
    print("pretrained candidates:", json.dumps(candidates), "chosen:", json.dumps(chosen), flush=True)
    for task, c in chosen.items():  # the starting policies travel back with the results (no optimizer state)
        keep = out / "chosen" / task
        if not keep.exists():
            shutil.copytree(c["ckpt"], keep, ignore=shutil.ignore_patterns("optimizer.safetensors"))
    # 3. every (task, method, seed) refinement run; version 0's evaluation is shared
    seeds = [int(x) for x in args.seeds.split(",")]
    methods = args.methods.split(",")
    ablation_tasks = args.ablation_tasks.split(",") if args.ablation_tasks else list(chosen)
    main_tasks = args.main_tasks.split(",") if args.main_tasks else list(chosen)
    # Every method's seed 0 on every task first, so a deadline cuts seeds, not whole methods.
    order = [(task, method, seed) for seed in seeds for method in methods for task in chosen
             if (task in ablation_tasks if method.startswith("habc_") else task in main_tasks)]
    jobs = []
    for task, method, seed in order:
        c = chosen[task]
        run_dir = out / "runs" / task / method / f"seed{seed}"
        (run_dir / "iter_00" / "eval").mkdir(parents=True, exist_ok=True)
        shutil.copy(c["summary"], run_dir / "iter_00" / "eval" / "summary.json")
        algo, extra = VARIANTS.get(method, (method, []))
        cmd = vla("refine", algo, "--ckpt", c["ckpt"], "--demos", c["demos"], "--task", task,
                  "--out", str(run_dir), "--resume", *STATE_MODE, f"seed={seed}",
                  f"collect_seed_offset={200_000 + 10_000 * seed}",  # independent rollouts per seed
                  f"iterations={args.iterations}", f"episodes_per_iteration={args.episodes}",
                  f"eval_episodes={args.eval_episodes}", f"train.steps={args.train_steps}",
                  f"train.ckpt_every={args.train_steps}", "workers=1", "videos=0", "train.progress=false", *extra)
        jobs.append((f"{task}/{method}/seed{seed}", cmd, out / "logs" / f"{task}_{method}_{seed}.log"))
    codes = _run_limited(jobs, args.parallel, deadline, "refine", env)
    # 4. collect the records
    rows = []
    for rec in sorted((out / "runs").glob("*/*/seed*/records.json")):
        method = rec.parts[-3]
        for r in json.loads(rec.read_text()):
            rows.append({**r, "method": method})
    results = {"chosen": chosen, "candidates": candidates, "exit_codes": codes, "records": rows,
               "settings": vars(args), "seconds": time.time() - t_start,
               "machine": {"cpus": os.cpu_count(), "gpu": _gpu_name()}}
    (out / "results.json").write_text(json.dumps(results, indent=1))
    print(f"wrote {out / 'results.json'} ({len(rows)} records) in {time.time() - t_start:.0f} s")


def _gpu_name() -> str:
    try:
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    except Exception:  # informational only
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", default="runs/bench_refine/inputs")
    p.add_argument("--tasks", default="pick_place,stack3")
    p.add_argument("--budgets", default="5,10,20,40")
    p.add_argument("--noise", type=float, default=0.1)
    p.add_argument("--workers", type=int, default=2)
    p = sub.add_parser("_pretrain")
    for a in ("--inputs", "--store", "--out"):
        p.add_argument(a, required=True)
    p.add_argument("--steps", type=int, default=2000)
    p = sub.add_parser("run")
    p.add_argument("--inputs", default="runs/bench_refine/inputs")
    p.add_argument("--out", default="runs/bench_refine/run")
    p.add_argument("--tasks", default="pick_place,stack3")
    p.add_argument("--methods", default=",".join([*METHODS, *VARIANTS]),
                   help=f"methods and HABC ablations ({', '.join(VARIANTS)})")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--ablation-tasks", default="pick_place", help="tasks the HABC ablations run on")
    p.add_argument("--main-tasks", default="", help="tasks the methods and the control run on (default: all)")
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--eval-episodes", type=int, default=30)
    p.add_argument("--train-steps", type=int, default=500)
    p.add_argument("--pretrain-steps", type=int, default=2000)
    p.add_argument("--budgets", default="", help="demo budgets to pretrain on (default: every prepared one)")
    p.add_argument("--parallel", type=int, default=14)
    p.add_argument("--minutes", type=float, default=9.0)
    p = sub.add_parser("report")
    p.add_argument("--results", nargs="+", required=True)
    p.add_argument("--md", default=str(ROOT / "benchmarks/results/refine.md"))
    p.add_argument("--png-dir", default=str(ROOT / "benchmarks/results"))
    p.add_argument("--command", default="")
    p.add_argument("--notes", default="", help="markdown inserted after the header (findings, limits)")
    args = ap.parse_args()
    if args.cmd == "prepare":
        prepare(args)
    elif args.cmd == "_pretrain":
        _pretrain(args)
    elif args.cmd == "run":
        run(args)
    else:
        from refine_report import report  # benchmarks/ is this script's folder

        report(args)


if __name__ == "__main__":
    main()
