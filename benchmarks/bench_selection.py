"""Smooth chunk switches by test-time selection: best of N chunks sampled in one
batched call, executed by the asynchronous executor, against `sync` on the same seeds.

The executor drives the simulator's arm in simulated time (`executor_sim.run_episode`: each chunk
arrives `--delay-ticks` ticks after its trigger, 4 = 200 ms), the VLA behind the joint-space adapter,
`aligned` mode. Selection (`real.selection.ChunkSelection`) wraps the VLA inside the adapter, so it
scores candidates in the VLA's own action space: `by=coherence` (backward coherence with the plan
being replaced), `cfn` (a coin-flipping network fitted on the demos' successful (state, chunk) pairs,
TACO's verifier) or `both`. Latency: the wall-clock time of one adapter call (N candidates in one
batched call, then the IK), median over the run. Plain simulator evaluation (the policy's own setting,
no executor) of the best N against N=1 is reported too.

  python benchmarks/bench_selection.py --checkpoint runs/seljob/train/checkpoints/step_00007000 \\
      --demos runs/seljob/demos.zarr --episodes 50 --ns 1,4,8,16 --by coherence

Plain simulator evaluation (the evaluator, no executor) on 200 seeds the job never uses, at the
learnt noise (selection needs a spread of candidates; the job's checkpoint samples at scale 0),
against N = 1 and against the noise-free policy, then its paired figures into the results
(`sim_eval` in realrobot.json, `selection_sim.md`; CFN fitted on the job's demos with
`real.selection.fit_cfn(store_features(DEMOS, 8))` and `save_cfn(..., CKPT_DIR/cfn, 8)`):
  E="task=pick_place episodes=200 seed_range=collect seed_offset=2000 n_action_steps=4 videos=0"
  vla eval CKPT $E noise_scale=1 out_dir=runs/sel200/plain1
  vla eval CKPT $E noise_scale=0 out_dir=runs/sel200/plain0
  vla eval select:ckpt=CKPT,n=8,by=coherence,executed=4 $E noise_scale=1 out_dir=runs/sel200/select8
  (likewise n=16 -> select16; by=cfn,cfn=CFN -> cfn8; by=both,cfn=CFN -> both8; noise_scale=0.5 -> plain05,
  select8_05)
  python benchmarks/bench_selection.py --sim-eval \\
      runs/sel200/{plain0,plain05,plain1,select8_05,select8,select16,cfn8,both8}
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from executor_sim import run_episode

from real.config import load_deploy_config
from real.joint_vla import JointSpaceVLA
from real.selection import ChunkSelection, fit_cfn, save_cfn, store_features
from real.stages import NODE_CONFIG
from sim.evaluate import seed_outcomes
from sim.policies import load_policy
from vla.metrics import format_paired, paired_difference, wilson_interval
from vla.registry import TASKS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks/results"


class Timed:
    """The policy the executor's worker calls, timed on the wall clock."""

    def __init__(self, policy: JointSpaceVLA) -> None:
        self.policy, self.vla, self.seconds = policy, policy.vla, []

    def reset(self) -> None:
        self.policy.reset()

    def sample_chunk(self, obs_batch, prefix=None, guidance=None):
        t = time.perf_counter()
        out = self.policy.sample_chunk(obs_batch, prefix=prefix, guidance=guidance)
        self.seconds.append(time.perf_counter() - t)
        return out


def summarise(rs: list[dict[str, Any]], seconds: list[float]) -> dict[str, Any]:
    wins = sum(r["success"] for r in rs)
    return {"success": wins / len(rs), "wilson95": list(wilson_interval(wins, len(rs))), "episodes": len(rs),
            "jump": float(np.nanmean([r["jump_mean"] for r in rs])),
            "latency_ms_p50": float(np.median(seconds) * 1e3) if seconds else None,
            "per_seed_success": [bool(r["success"]) for r in rs]}


def sim_eval(folders: list[Path], out: Path) -> None:
    """The evaluator's summaries on the same seeds -> `sim_eval` in the results and `selection_sim.md`.
    Folders of the plain policy (N = 1) at several noise scales and of selections: each selection is
    paired by seed with the plain policy at its own noise scale and with the plain policy at scale 0
    (the cheaper way to a better chunk: sample no noise at all)."""
    runs = {d.name: json.loads((d / "summary.json").read_text()) for d in folders}
    seeds = {name: seed_outcomes(r) for name, r in runs.items()}
    if len({frozenset(o) for o in seeds.values()}) != 1:
        raise ValueError("--sim-eval: the evaluations were not run on the same seeds")
    plain = {r["config"]["noise_scale"]: name for name, r in runs.items() if not r["policy"].startswith("select:")}
    ref = plain.get(0.0)
    res = json.loads(out.read_text()) if out.exists() else {}
    old = res.get("sim_eval")
    if old is not None and "variants" not in old:  # the first, 50-seed measurement (the seljob run)
        res["sim_eval_seljob50"] = old
    some = next(iter(seeds.values()))
    rec: dict[str, Any] = {"episodes": len(some), "seeds": [min(some), max(some)], "variants": {}}

    lines = ["# Test-time chunk selection in plain simulator evaluation", "",
             "Command: `python benchmarks/bench_selection.py --sim-eval " + " ".join(map(str, folders)) + "` "
             "(the `vla eval` runs it reads are in the docstring of `benchmarks/bench_selection.py`)", "",
             f"pick_place, {len(some)} seeds {min(some)}..{max(some)}, the evaluator (no executor, no delay), "
             "re-planning every 4 steps. Paired by seed, 95% t interval, (seeds better / worse).", "",
             "| policy | noise scale | success | minus N = 1 at the same scale | minus N = 1 at scale 0 |",
             "|---|---|---|---|---|"]
    for name, r in runs.items():
        scale = r["config"]["noise_scale"]
        same = plain.get(scale)
        v = {"policy": r["policy"], "noise_scale": scale, "success": r["success_rate"],
             "minus_plain_same_scale": None if same in (None, name) else paired_difference(seeds[same], seeds[name]),
             "minus_noise0": None if ref in (None, name) else paired_difference(seeds[ref], seeds[name]),
             "per_seed_success": [bool(seeds[name][k]) for k in sorted(some)]}  # seeds in order
        rec["variants"][name] = v
        lines.append(f"| {name} (`{r['policy']}`) | {scale} | {r['success_rate']:.3f} | "
                     f"{format_paired(v['minus_plain_same_scale'])} | {format_paired(v['minus_noise0'])} |")
    res["sim_eval"] = rec
    out.write_text(json.dumps(res, indent=1))
    (RESULTS / "selection_sim.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sim-eval", nargs="+", type=Path, default=None, metavar="DIR",
                    help="record the evaluator's summaries of plain (N = 1) and selection runs (no episodes run)")
    ap.add_argument("--checkpoint", default=None)
    ap.add_argument("--demos", default=None, help="EpisodeStore to fit the CFN on (by=cfn|both)")
    ap.add_argument("--episodes", type=int, default=50)
    ap.add_argument("--first-seed", type=int, default=1000)
    ap.add_argument("--delay-ticks", type=int, default=4)
    ap.add_argument("--ns", default="1,4,8,16")
    ap.add_argument("--by", default="coherence", choices=["coherence", "smooth", "cfn", "both"])
    ap.add_argument("--decay", type=float, default=1.0, help="coherence: weight decay**i on tick i after the prefix")
    ap.add_argument("--blend", type=int, default=0, help="aligned: executor.blend_ticks (ramp after a switch)")
    ap.add_argument("--mode", default="aligned", choices=["aligned", "ensemble"],
                    help="the asynchronous executor's mode (ensemble: temporal ensembling of every arrived chunk)")
    ap.add_argument("--ensemble-rate", type=float, default=0.3, help="ensemble: executor.ensemble_rate")
    ap.add_argument("--tag", default="", help="suffix of the result keys (variants beside the main n1..n16)")
    ap.add_argument("--no-sync", action="store_true", help="reuse the stored sync run (same seeds)")
    ap.add_argument("--noise-scale", type=float, default=None,
                    help="sample every policy at this noise scale instead of the checkpoint's (sync keeps its own)")
    ap.add_argument("--out", default=str(RESULTS / "realrobot.json"))
    args = ap.parse_args()
    if args.sim_eval:
        return sim_eval(args.sim_eval, Path(args.out))
    if not args.checkpoint:
        ap.error("--checkpoint is required")
    env = TASKS.make("pick_place")
    cfg = load_deploy_config(NODE_CONFIG)
    seeds = list(range(args.first_seed, args.first_seed + args.episodes))
    cfn = None
    if args.by in ("cfn", "both"):
        cfn = fit_cfn(store_features(args.demos, 8))
        save_cfn(cfn, Path(args.checkpoint).parent.parent / "cfn", 8)
    res: dict[str, Any] = json.loads(Path(args.out).read_text()) if Path(args.out).exists() else {}
    t0 = time.time()

    def run(mode: str, n: int | None) -> dict[str, Any]:
        # a checkpoint sampled at scale 0 gives N identical candidates: selection needs a spread
        vla = load_policy(args.checkpoint, env, seed=0, noise_scale=None if n is None else args.noise_scale)
        inner = vla if n is None else ChunkSelection(vla, n=n, by=args.by, cfn=cfn, decay=args.decay)
        policy = Timed(JointSpaceVLA(inner))
        blend = args.blend if mode == "aligned" else 0
        extra = {"ensemble_rate": args.ensemble_rate} if mode == "ensemble" else {}
        rs = [run_episode(env, cfg, policy, "state", mode, s, args.delay_ticks, blend, **extra) for s in seeds]
        out = summarise(rs, policy.seconds)
        print(f"{mode} n={n}: success {out['success']:.2f}, jump {out['jump']:.2f}, "
              f"latency p50 {out['latency_ms_p50']:.1f} ms ({time.time() - t0:.0f} s)", flush=True)
        return out

    if not (args.no_sync and "sync" in res):
        res["sync"] = run("sync", None)
    for n in (int(x) for x in args.ns.split(",")):
        r = run(args.mode, n)
        r["minus_sync"] = paired_difference(dict(zip(seeds, res["sync"]["per_seed_success"], strict=True)),
                                            dict(zip(seeds, r["per_seed_success"], strict=True)))
        r["decay"], r["blend_ticks"], r["noise_scale"], r["mode"] = args.decay, args.blend, args.noise_scale, args.mode
        if args.mode == "ensemble":
            r["ensemble_rate"] = args.ensemble_rate
        res[f"n{n}{args.tag}"] = r
    res["selection_setup"] = {"by": args.by, "delay_ticks": args.delay_ticks, "seeds": [seeds[0], seeds[-1]],
                              "checkpoint": args.checkpoint, "seconds": time.time() - t0}
    Path(args.out).write_text(json.dumps(res, indent=1))
    lines = ["# Test-time chunk selection in the executor", "",
             f"Command: `python benchmarks/bench_selection.py --checkpoint {args.checkpoint} --episodes "
             f"{args.episodes} --ns {args.ns} --by {args.by}"
             + (f" --blend {args.blend}" if args.blend else "") + (f" --tag {args.tag}" if args.tag else "")
             + (" --no-sync" if args.no_sync else "")
             + (f" --noise-scale {args.noise_scale}" if args.noise_scale is not None else "")
             + (f" --mode ensemble --ensemble-rate {args.ensemble_rate}" if args.mode == "ensemble" else "")
             + (f" --delay-ticks {args.delay_ticks}" if args.delay_ticks != 4 else "")
             + (f" --out {args.out}" if Path(args.out) != RESULTS / "realrobot.json" else "") + "`", "",
             f"pick_place seeds {seeds[0]}..{seeds[-1]}, chunks delivered {args.delay_ticks} ticks "
             f"({args.delay_ticks * 50} ms) after their trigger, simulated time; selection by {args.by}"
             + (f"; switches ramped over {args.blend} ticks (`executor.blend_ticks`)" if args.blend else "")
             + ". Jump = "
             "action change at a chunk switch / median per-step change (joint space). Latency = one call "
             "of the adapter (N candidates batched + IK) on this CPU, median.", "",
             "| executor | N | success | Wilson 95% | minus sync (paired) | jump | latency p50 ms |",
             "|---|---|---|---|---|---|---|"]
    for key in ["sync", *(f"n{n}{args.tag}" for n in args.ns.split(","))]:
        r = res[key]
        d = r.get("minus_sync")
        dd = f"{d['mean']:+.2f} [{d['lo']:+.2f}, {d['hi']:+.2f}]" if d else "-"
        n = key[1:].split("_")[0] if key != "sync" else "-"
        mode = "sync" if key == "sync" else r.get("mode", "aligned")
        mode += f" (rate {r['ensemble_rate']})" if "ensemble_rate" in r else ""
        lines.append(f"| {mode} | {n} | "
                     f"{r['success']:.2f} | [{r['wilson95'][0]:.2f}, {r['wilson95'][1]:.2f}] | {dd} | "
                     f"{r['jump']:.2f} | {r['latency_ms_p50']:.1f} |")
    (RESULTS / f"selection{args.tag}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
