"""DSRL (arXiv 2506.15799; vla/refine/dsrl.py) on HABC's autonomous setting: a frozen flow policy improved
from its own episodes' sparse outcomes alone, by learning which initial noise to integrate from.

  python benchmarks/bench_dsrl.py run --out runs/bench_dsrl --seeds 0,1,2,3,4
  python benchmarks/bench_dsrl.py eval-sample --out runs/bench_dsrl   # the saved actors' sampled noise
  python benchmarks/bench_dsrl.py report --out runs/bench_dsrl --name dsrl
  python benchmarks/bench_dsrl.py sensitivity --name dsrl   # how the outcome depends on the noise

Protocol (HABC's, benchmarks/bench_habc.py): the base is `d15_s3000` of
`python benchmarks/wm_candidates.py --out runs/bench_wm/inputs --runs d15` (pick_place, 15 demos, state
mode); seed s collects from the seeds 500000 + 10000 s on (the same collection seeds as every HABC
method) and is evaluated on 50 seeds of the `report` range (`--eval-range`; before the seed protocol the collect
seeds 100000+) at each milestone (episodes collected so far, the
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

DEFAULT_CKPT = "runs/bench_wm/inputs/pretrain/d15/checkpoints/step_00003000"
SPEC = {"task": "pick_place", "source": "rollout", "video_size": 0, "n_action_steps": 8, "label": "executed",
        "policy_version": 0}


def make_env(task: str) -> Any:
    from sim.evaluate import env_kwargs
    from vla.registry import TASKS

    return TASKS.make(task, **env_kwargs({"image_size": 84, "obs_mode": "state", "cameras": [], "horizon": None}))


def episodes(env: Any, policy: Any, seeds: list[int], task: str) -> list[dict[str, Any]]:
    from sim.eval_worker import run_eval_episode

    out = []
    for s in seeds:
        r, _, _ = run_eval_episode(env, policy, s, {**SPEC, "task": task}, record=False, video=False)
        out.append({"seed": s, "success": bool(r.success), "length": int(r.length)})
    return out


def eval_seeds(args: argparse.Namespace, n: int | None = None) -> list[int]:
    from vla.protocol import seeds

    return seeds(args.eval_range, n or args.eval_episodes, args.eval_offset)


def rate(rows: list[dict[str, Any]]) -> float:
    return float(np.mean([r["success"] for r in rows]))


def controls(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """The base (sampled noise) and the base from x0 = 0 on the evaluation seeds, once."""
    path = out / "controls.json"
    if path.exists():
        return json.loads(path.read_text())
    from vla.policy.policy import load_torch_policy
    from vla.refine.dsrl_policy import SteeredPolicy

    env, seeds = make_env(args.task), eval_seeds(args)
    res = {"base": episodes(env, load_torch_policy(args.ckpt), seeds, args.task),
           "zero": episodes(env, SteeredPolicy(load_torch_policy(args.ckpt), None, mode="zero"), seeds, args.task)}
    path.write_text(json.dumps(res))
    print(f"controls: base {rate(res['base']):.2f}, zero noise {rate(res['zero']):.2f}", flush=True)
    return res


def run_seed(args: argparse.Namespace, seed: int, out: Path) -> None:
    import torch

    from vla.config import load_config
    from vla.policy.policy import load_torch_policy
    from vla.refine.dsrl import DSRLAgent, DSRLConfig, Replay
    from vla.refine.dsrl_policy import SteeredPolicy

    path = out / f"seed{seed}.json"
    if path.exists():
        print(f"seed {seed}: done", flush=True)
        return
    torch.set_num_threads(1)
    env = make_env(args.task)
    base = load_torch_policy(args.ckpt)
    cfg = load_config(DSRLConfig, "dsrl", overrides=args.dsrl)  # unknown keys: one line with the close match
    noise_dim = base.cfg.action_dim if args.steer == "shared" else base.cfg.chunk_size * base.cfg.action_dim
    steered = SteeredPolicy(base, None, mode="base", steer_dim=noise_dim)
    rng = np.random.default_rng(seed)
    collect0 = args.collect_seed_start + 10_000 * seed
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
                steered = SteeredPolicy(base, agent, mode="sample", seeded=False)
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
            ev = episodes(env, SteeredPolicy(base, agent, mode="mean"), eval_seeds(args), args.task)
            agent.save(out / f"seed{seed}_ep{i + 1}.safetensors")
            recent = [c["success"] for c in log["collect"][-20:]]
            log["evals"][str(i + 1)] = ev
            print(f"seed {seed} ep {i + 1}: eval {rate(ev):.2f}, last 20 collected {np.mean(recent):.2f}, "
                  f"alpha {log['losses'][-1]['alpha']:.3f}, q {log['losses'][-1]['q']:.3f}, "
                  f"{time.time() - t0:.0f} s", flush=True)
    log["seconds"] = time.time() - t0
    path.write_text(json.dumps(log))


def eval_sample(args: argparse.Namespace, out: Path) -> None:
    """Every finished seed's saved actors at each milestone, run with their sampled noise (a stream
    restarted at each evaluation seed) on the evaluation seeds; resumable per seed."""
    from vla.policy.policy import load_torch_policy
    from vla.refine.dsrl import load_actor
    from vla.refine.dsrl_policy import SteeredPolicy

    env, seeds = make_env(args.task), eval_seeds(args)
    for p in sorted(out.glob("seed[0-9]*.json")):
        if p.stem.endswith("_sample"):
            continue
        dest = out / f"{p.stem}_sample.json"
        done = json.loads(dest.read_text()) if dest.exists() else {}
        for m in json.loads(p.read_text())["evals"]:
            if m in done:
                continue
            actor = load_actor(out / f"{p.stem}_ep{m}.safetensors")
            policy = SteeredPolicy(load_torch_policy(args.ckpt), actor, mode="sample")
            done[m] = episodes(env, policy, seeds, args.task)
            dest.write_text(json.dumps(done))
            print(f"{p.stem} ep {m}: sampled noise {rate(done[m]):.2f}", flush=True)


def constant_noise(base: Any, w: np.ndarray) -> Any:
    """The base run from one fixed shared noise vector at every query (the sensitivity probe)."""
    from vla.refine.dsrl_policy import SteeredPolicy

    class ConstantNoise(SteeredPolicy):
        def noise_for(self, feats: np.ndarray) -> np.ndarray:
            return np.repeat(w[None].astype(np.float32), len(feats), 0)

    return ConstantNoise(base, None, mode="zero", steer_dim=base.cfg.action_dim)


def sensitivity(args: argparse.Namespace) -> None:
    """How an episode's outcome depends on the initial noise: the base from x0 = 0 and from 4 shared
    noise vectors at each scale (0.1, 0.3, 1) on 30 evaluation seeds: success, the share of
    episodes whose outcome differs from x0 = 0's, and the seeds some vector solves."""
    from vla.policy.policy import load_torch_policy

    env, base = make_env(args.task), load_torch_policy(args.ckpt)
    seeds = eval_seeds(args, 30)
    rng = np.random.default_rng(1)
    grid: dict[str, list[list[bool]]] = {}
    for scale in (0.0, 0.1, 0.3, 1.0):
        grid[str(scale)] = []
        for _ in range(1 if scale == 0 else 4):
            w = np.clip(scale * rng.standard_normal(base.cfg.action_dim), -1.5, 1.5)
            grid[str(scale)].append([r["success"] for r in episodes(env, constant_noise(base, w), seeds, args.task)])
    zero = np.array(grid["0.0"][0])
    res: dict[str, Any] = {"seeds": [seeds[0], seeds[-1]], "zero_success": float(zero.mean()), "grid": grid}
    for scale in ("0.1", "0.3", "1.0"):
        m = np.array(grid[scale])
        res[scale] = {"success": float(m.mean()), "per_vector": m.mean(1).tolist(),
                      "flips_vs_zero": float((m != zero[None]).mean()), "solved_by_any": float(m.any(0).mean())}
        print(f"scale {scale}: success {m.mean():.2f}, outcome differs from x0 = 0 on {(m != zero[None]).mean():.2f}, "
              f"seeds solved by some vector {m.any(0).mean():.2f} (x0 = 0: {zero.mean():.2f})", flush=True)
    (Path(args.results) / f"{args.name}_sensitivity.json").write_text(json.dumps(res, indent=1))


def interval(d: list[float]) -> dict[str, Any]:
    """The mean of differences and its 95% t interval (NaN with fewer than 2)."""
    from vla.metrics import t_interval

    lo, hi = t_interval(np.asarray(d))
    return {"mean": float(np.mean(d)), "low": lo, "high": hi}


def paired(a: list[float], b: list[float]) -> dict[str, Any]:
    d = [float(x) - float(y) for x, y in zip(a, b, strict=True)]
    return {**interval(d), "per_seed": [round(x, 3) for x in d]}


def mean_success_length(rows: list[dict[str, Any]]) -> float | None:
    lengths = [r["length"] for r in rows if r["success"]]
    return float(np.mean(lengths)) if lengths else None


def plot(runs: dict[int, dict[str, Any]], base: float, zero: float, path: Path) -> None:
    """Per training seed: the evaluation at each milestone, and the collected episodes' success (a
    running mean over 20), with the two controls."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_e, ax_c) = plt.subplots(1, 2, figsize=(11, 3.8))
    for s, r in sorted(runs.items()):
        ms = sorted(int(m) for m in r["evals"])
        line = ax_e.plot(ms, [rate(r["evals"][str(m)]) for m in ms], marker="o", label=f"seed {s}")[0]
        ok = np.array([c["success"] for c in r["collect"]], float)
        if len(ok) >= 20:
            ax_c.plot(np.arange(20, len(ok) + 1), np.convolve(ok, np.ones(20) / 20, "valid"), color=line.get_color())
    for ax in (ax_e, ax_c):
        ax.axhline(base, color="k", ls="--", lw=1, label="base (sampled noise)")
        ax.axhline(zero, color="grey", ls=":", lw=1.5, label="base from x0 = 0")
        ax.set(xlabel="episodes collected", ylim=(0, 1))
        ax.grid(alpha=0.3)
    ax_e.set(title="evaluation (actor's mean noise)", ylabel="success rate")
    ax_c.set(title="collection (actor's sampled noise), running mean of 20")
    ax_e.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def report(args: argparse.Namespace, out: Path) -> None:
    ctl = json.loads((out / "controls.json").read_text())
    runs = {int(p.stem[4:]): json.loads(p.read_text()) for p in sorted(out.glob("seed[0-9]*.json"))
            if not p.stem.endswith("_sample")}
    sampled = {s: json.loads((out / f"seed{s}_sample.json").read_text()) for s in runs
               if (out / f"seed{s}_sample.json").exists()}
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
        # pooled over (training seed, evaluation seed) pairs: each evaluation episode against the same
        # seed's control episode (the controls are one evaluation, so this holds their noise once)
        for ctl_name in ("base", "zero"):
            ctl_ok = {r["seed"]: r["success"] for r in ctl[ctl_name]}
            d = [float(r["success"]) - float(ctl_ok[r["seed"]]) for s in have for r in runs[s]["evals"][str(m)]]
            res["milestones"][str(m)][f"pooled_minus_{ctl_name}"] = interval(d)
        res["milestones"][str(m)]["steps_to_success"] = mean_success_length(
            [r for s in have for r in runs[s]["evals"][str(m)]])
        have_s = [s for s in have if str(m) in sampled.get(s, {})]
        if have_s:  # the actor's sampled noise against the base's sampled noise
            rates_s = [rate(sampled[s][str(m)]) for s in have_s]
            res["milestones"][str(m)]["sampled"] = {"seeds": have_s, "success": float(np.mean(rates_s)),
                                                    "per_seed": rates_s,
                                                    "minus_base": paired(rates_s, [base] * len(rates_s))}
    res["base_steps_to_success"] = mean_success_length(ctl["base"])
    res["zero_noise_steps_to_success"] = mean_success_length(ctl["zero"])
    res["collect_success"] = {s: rate(runs[s]["collect"]) for s in seeds}
    res["seconds"] = {s: runs[s].get("seconds") for s in seeds}
    # the headline, named before the report-range run: the last milestone's mean-noise actor against the
    # x0 = 0 control (the actor's starting mean: a gain over it is not "use the mean noise")
    last = res["milestones"][str(milestones[-1])]
    z = last["minus_zero_noise"]
    res["final_minus_zero_noise"] = {"mean": z["mean"], "lo": z["low"], "hi": z["high"], "episodes": milestones[-1]}
    res["final_success"] = last["success"]
    Path(args.results).mkdir(parents=True, exist_ok=True)
    from results_io import write_result

    write_result(args.name, res, seed_range=args.eval_range, results=Path(args.results),
                 key_figures=["final_minus_zero_noise", "final_success", "zero_noise_success", "base_success"])
    plot(runs, base, zero, Path(args.results) / f"{args.name}.png")
    lines = [f"# DSRL on {args.task} (autonomous: sparse outcomes, no person)", "",
             f"Base `{args.ckpt}`: {base:.2f} sampling, {zero:.2f} from x0 = 0, on {args.eval_episodes} seeds "
             f"from {eval_seeds(args)[0]} ({args.eval_range} range).", "",
             "| episodes collected | success (mean of seeds) | per seed | minus base | minus x0 = 0 |",
             "|---|---|---|---|---|"]
    for m, v in res["milestones"].items():
        b, z = v["minus_base"], v["minus_zero_noise"]
        lines.append(f"| {m} | {v['success']:.3f} | {', '.join(f'{x:.2f}' for x in v['per_seed'])} | "
                     f"{b['mean']:+.3f} [{b['low']:+.3f}, {b['high']:+.3f}] | {z['mean']:+.3f} [{z['low']:+.3f}, "
                     f"{z['high']:+.3f}] |")
    lines += ["", "Intervals: 95% t over training seeds (the controls are one evaluation each, so their own "
              "sampling noise, about +-0.13 on 50 episodes, is not in them). Pooled over every (training seed, "
              "evaluation seed) pair, each episode against the control's episode on the same seed:", "",
              "| episodes collected | minus base, pooled | minus x0 = 0, pooled | steps to success |",
              "|---|---|---|---|"]
    for m, v in res["milestones"].items():
        b, z = v["pooled_minus_base"], v["pooled_minus_zero"]
        steps = v["steps_to_success"]
        lines.append(f"| {m} | {b['mean']:+.3f} [{b['low']:+.3f}, {b['high']:+.3f}] | {z['mean']:+.3f} "
                     f"[{z['low']:+.3f}, {z['high']:+.3f}] | {steps if steps is None else round(steps, 1)} |")
    if any("sampled" in v for v in res["milestones"].values()):
        lines += ["", "The actor's sampled noise (evaluation seeds, a stream restarted per seed) against the base's "
                  "sampled noise:", "", "| episodes collected | success | per seed | minus base |", "|---|---|---|---|"]
        for m, v in res["milestones"].items():
            if "sampled" in v:
                sv, b = v["sampled"], v["sampled"]["minus_base"]
                lines.append(f"| {m} | {sv['success']:.3f} | {', '.join(f'{x:.2f}' for x in sv['per_seed'])} | "
                             f"{b['mean']:+.3f} [{b['low']:+.3f}, {b['high']:+.3f}] |")
    def steps(x: float | None) -> str:
        return "-" if x is None else f"{x:.1f}"

    lines += ["", f"Steps to success of the controls: base {steps(res['base_steps_to_success'])}, x0 = 0 "
              f"{steps(res['zero_noise_steps_to_success'])}. Curves: `{args.name}.png`."]
    (Path(args.results) / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cmd", choices=("run", "eval-sample", "report", "sensitivity"))
    ap.add_argument("--out", default="runs/bench_dsrl")
    ap.add_argument("--ckpt", default=DEFAULT_CKPT)
    ap.add_argument("--task", default="pick_place")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--milestones", default="60,150,300", help="episodes collected at which to evaluate")
    ap.add_argument("--warmup", type=int, default=20, help="episodes of the base's own noise before learning")
    ap.add_argument("--eval-episodes", type=int, default=50)
    ap.add_argument("--eval-range", default="report", choices=("collect", "tune", "report"),
                    help="the protocol range (vla.protocol) of the evaluation seeds: report for a figure, tune to "
                    "choose a setting; the figures before the seed protocol used collect from 100000")
    ap.add_argument("--eval-offset", type=int, default=0, help="the first evaluation seed within --eval-range")
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
    if args.cmd == "eval-sample":
        eval_sample(args, out)
        return
    if args.cmd == "sensitivity":
        sensitivity(args)
        return
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.jobs > 1 and len(seeds) > 1:
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        base_cmd = [__file__, "run", "--out", str(out), "--ckpt", args.ckpt, "--task", args.task, "--milestones",
                    args.milestones, "--warmup", str(args.warmup), "--eval-episodes", str(args.eval_episodes),
                    "--eval-range", args.eval_range, "--eval-offset", str(args.eval_offset), "--collect-seed-start",
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
