"""DSRL (arXiv 2506.15799; vla/refine/dsrl.py) on HABC's autonomous setting: a frozen flow policy improved
from its own episodes' sparse outcomes alone, by learning which initial noise to integrate from.

  python benchmarks/bench_dsrl.py run --out runs/bench_dsrl --seeds 0,1,2,3,4
  python benchmarks/bench_dsrl.py report --out runs/bench_dsrl --name dsrl

Protocol (HABC's, benchmarks/bench_habc.py): the base is `d15_s3000` of
`python benchmarks/wm_candidates.py --out runs/bench_wm/inputs --runs d15` (pick_place, 15 demos, state
mode); seed s collects from the seeds 500000 + 10000 s on (the same collection seeds as every HABC
method) and is evaluated on the 50 seeds 100000+ at each milestone (episodes collected so far, the
first at HABC's 60 = 3 rounds x 20), with the actor's mean noise. Controls on the same evaluation
seeds, once: the base as it samples (N(0, I) noise), and the base from x0 = 0 (the actor's starting
mean, so a gain over it is not "use the mean noise"). A seed's run is one process (resumable by
seed: a finished seed is skipped); `--jobs 2` runs two seeds side by side, one thread each.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_CKPT = "runs/bench_wm/inputs/pretrain/d15/checkpoints/step_00003000"
SPEC = {"task": "pick_place", "source": "rollout", "video_size": 0, "n_action_steps": 8, "label": "executed",
        "policy_version": 0}


def make_env(task: str) -> Any:
    from sim.evaluate import env_kwargs
    from vla.registry import TASKS

    return TASKS.make(task, **env_kwargs({"image_size": 84, "obs_mode": "state", "cameras": [], "horizon": None}))


def episodes(env: Any, policy: Any, seeds: list[int], task: str) -> list[dict[str, Any]]:
    from sim.eval_worker import run_episode

    out = []
    for s in seeds:
        r, _, _ = run_episode(env, policy, s, {**SPEC, "task": task}, record=False, video=False)
        out.append({"seed": s, "success": bool(r.success), "length": int(r.length)})
    return out


def rate(rows: list[dict[str, Any]]) -> float:
    return float(np.mean([r["success"] for r in rows]))


def controls(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """The base (sampled noise) and the base from x0 = 0 on the evaluation seeds, once."""
    path = out / "controls.json"
    if path.exists():
        return json.loads(path.read_text())
    from vla.policy.policy import load_policy
    from vla.refine.dsrl_policy import SteeredPolicy

    env = make_env(args.task)
    seeds = list(range(args.eval_seed_start, args.eval_seed_start + args.eval_episodes))
    res = {"base": episodes(env, load_policy(args.ckpt), seeds, args.task),
           "zero": episodes(env, SteeredPolicy(load_policy(args.ckpt), None, mode="zero"), seeds, args.task)}
    path.write_text(json.dumps(res))
    print(f"controls: base {rate(res['base']):.2f}, zero noise {rate(res['zero']):.2f}", flush=True)
    return res


def run_seed(args: argparse.Namespace, seed: int, out: Path) -> None:
    import torch

    from vla.policy.policy import load_policy
    from vla.refine.dsrl import DSRLAgent, DSRLConfig, Replay
    from vla.refine.dsrl_policy import SteeredPolicy

    path = out / f"seed{seed}.json"
    if path.exists():
        print(f"seed {seed}: done", flush=True)
        return
    torch.set_num_threads(1)
    env = make_env(args.task)
    base = load_policy(args.ckpt)
    cfg = DSRLConfig(**{k: (v.lower() in ("1", "true") if isinstance(getattr(DSRLConfig, k), bool)
                            else type(getattr(DSRLConfig, k))(v)) for k, v in (a.split("=") for a in args.dsrl)})
    noise_dim = base.cfg.action_dim if args.steer == "shared" else base.cfg.chunk_size * base.cfg.action_dim
    steered = SteeredPolicy(base, None, mode="base", steer_dim=noise_dim)
    rng = np.random.default_rng(seed)
    collect0 = args.collect_seed_start + 10_000 * seed
    eval_seeds = list(range(args.eval_seed_start, args.eval_seed_start + args.eval_episodes))
    milestones = sorted(int(m) for m in args.milestones.split(","))
    agent: DSRLAgent | None = None
    replay: Replay | None = None
    pending: list[tuple[np.ndarray, np.ndarray, bool]] = []
    log: dict[str, Any] = {"seed": seed, "config": vars(cfg), "collect": [], "evals": {}, "losses": []}
    t0 = time.time()
    for i in range(milestones[-1]):
        res = episodes(env, steered, [collect0 + i], args.task)[0]
        feats, w = steered.take_decisions()
        log["collect"].append({**res, "mode": steered.mode, "decisions": len(feats)})
        if agent is None:
            pending.append((feats, w, res["success"]))
            if i + 1 == args.warmup:  # the actor's feature statistics come from the base's own episodes
                allf = np.concatenate([p[0] for p in pending])
                agent = DSRLAgent(allf.shape[1], noise_dim, cfg, allf.mean(0), allf.std(0), seed=seed)
                replay = Replay(allf.shape[1], noise_dim, cfg.gamma)
                for f, x, ok in pending:
                    replay.add_episode(f, x, ok)
                steered = SteeredPolicy(base, agent, mode="sample")
        else:
            assert replay is not None
            replay.add_episode(feats, w, res["success"])
        if agent is not None and replay is not None:
            n = cfg.utd * (len(feats) if i + 1 > args.warmup else len(replay))
            for _ in range(n):
                stats = agent.update(replay.sample(cfg.batch_size, rng))
            if n:
                log["losses"].append({"episode": i + 1, **stats})
        if i + 1 in milestones:
            assert agent is not None, "the first milestone must come after the warm-up"
            ev = episodes(env, SteeredPolicy(base, agent, mode="mean"), eval_seeds, args.task)
            agent.save(out / f"seed{seed}_ep{i + 1}.safetensors")
            recent = [c["success"] for c in log["collect"][-20:]]
            log["evals"][str(i + 1)] = ev
            print(f"seed {seed} ep {i + 1}: eval {rate(ev):.2f}, last 20 collected {np.mean(recent):.2f}, "
                  f"alpha {log['losses'][-1]['alpha']:.3f}, q {log['losses'][-1]['q']:.3f}, "
                  f"{time.time() - t0:.0f} s", flush=True)
    log["seconds"] = time.time() - t0
    path.write_text(json.dumps(log))


def paired(a: list[float], b: list[float]) -> dict[str, Any]:
    from vla.metrics import t_interval

    d = np.asarray(a) - np.asarray(b)
    lo, hi = t_interval(d) if len(d) > 1 else (float("nan"), float("nan"))
    return {"mean": float(d.mean()), "low": lo, "high": hi, "per_seed": [round(float(x), 3) for x in d]}


def report(args: argparse.Namespace, out: Path) -> None:
    ctl = json.loads((out / "controls.json").read_text())
    runs = {int(p.stem[4:]): json.loads(p.read_text()) for p in sorted(out.glob("seed*.json"))}
    if not runs:
        raise SystemExit(f"{out}: no finished seed (run first)")
    seeds = sorted(runs)
    milestones = sorted({int(m) for r in runs.values() for m in r["evals"]})
    base, zero = rate(ctl["base"]), rate(ctl["zero"])
    res: dict[str, Any] = {"task": args.task, "ckpt": args.ckpt, "seeds": seeds, "eval_episodes": args.eval_episodes,
                           "base_success": base, "zero_noise_success": zero, "milestones": {}}
    for m in milestones:
        have = [s for s in seeds if str(m) in runs[s]["evals"]]
        rates = [rate(runs[s]["evals"][str(m)]) for s in have]
        res["milestones"][str(m)] = {"seeds": have, "success": float(np.mean(rates)), "per_seed": rates,
                                     "minus_base": paired(rates, [base] * len(rates)),
                                     "minus_zero_noise": paired(rates, [zero] * len(rates))}
    res["collect_success"] = {s: rate(runs[s]["collect"]) for s in seeds}
    res["seconds"] = {s: runs[s].get("seconds") for s in seeds}
    Path(args.results).mkdir(parents=True, exist_ok=True)
    (Path(args.results) / f"{args.name}.json").write_text(json.dumps(res, indent=1))
    lines = [f"# DSRL on {args.task} (autonomous: sparse outcomes, no person)", "",
             f"Base `{args.ckpt}`: {base:.2f} sampling, {zero:.2f} from x0 = 0, on {args.eval_episodes} seeds "
             f"from {args.eval_seed_start}.", "",
             "| episodes collected | success (mean of seeds) | per seed | minus base | minus x0 = 0 |",
             "|---|---|---|---|---|"]
    for m, v in res["milestones"].items():
        b, z = v["minus_base"], v["minus_zero_noise"]
        lines.append(f"| {m} | {v['success']:.3f} | {', '.join(f'{x:.2f}' for x in v['per_seed'])} | "
                     f"{b['mean']:+.3f} [{b['low']:+.3f}, {b['high']:+.3f}] | {z['mean']:+.3f} [{z['low']:+.3f}, "
                     f"{z['high']:+.3f}] |")
    (Path(args.results) / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cmd", choices=("run", "report"))
    ap.add_argument("--out", default="runs/bench_dsrl")
    ap.add_argument("--ckpt", default=DEFAULT_CKPT)
    ap.add_argument("--task", default="pick_place")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--milestones", default="60,150,300", help="episodes collected at which to evaluate")
    ap.add_argument("--warmup", type=int, default=20, help="episodes of the base's own noise before learning")
    ap.add_argument("--eval-episodes", type=int, default=50)
    ap.add_argument("--eval-seed-start", type=int, default=100_000)
    ap.add_argument("--collect-seed-start", type=int, default=500_000)
    ap.add_argument("--steer", choices=("shared", "full"), default="shared",
                    help="shared: one A-dim noise vector for every step of the chunk; full: H x A")
    ap.add_argument("--jobs", type=int, default=1, help="seeds run side by side (one thread each)")
    ap.add_argument("--dsrl", nargs="*", default=[], help="DSRLConfig overrides key=value")
    ap.add_argument("--name", default="dsrl")
    ap.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not Path(args.ckpt).exists():
        raise SystemExit(f"--ckpt {args.ckpt}: no such checkpoint (make it: python benchmarks/wm_candidates.py "
                         "--out runs/bench_wm/inputs --runs d15)")
    if args.cmd == "report":
        report(args, out)
        return
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.jobs > 1 and len(seeds) > 1:
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        base_cmd = [__file__, "run", "--out", str(out), "--ckpt", args.ckpt, "--task", args.task, "--milestones",
                    args.milestones, "--warmup", str(args.warmup), "--eval-episodes", str(args.eval_episodes),
                    "--eval-seed-start", str(args.eval_seed_start), "--collect-seed-start",
                    str(args.collect_seed_start), "--steer", args.steer, "--dsrl", *args.dsrl]
        controls(args, out)
        procs: list[subprocess.Popen] = []
        for s in seeds:
            while len([p for p in procs if p.poll() is None]) >= args.jobs:
                time.sleep(5)
            procs.append(subprocess.Popen([sys.executable, *base_cmd, "--seeds", str(s)], env=env))
        for p in procs:
            p.wait()
        return
    controls(args, out)
    for s in seeds:
        run_seed(args, s, out)


if __name__ == "__main__":
    main()
