"""Smooth chunk switches by test-time selection (issue 16, item 4): best of N chunks sampled in one
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

Plain simulator evaluation (the evaluator, no executor), then its paired figure into the results:
  vla eval CKPT task=pick_place episodes=50 seed_start=1000 n_action_steps=4 out_dir=runs/sel_eval/plain
  vla eval select:ckpt=CKPT,n=8,by=coherence,executed=4 task=pick_place episodes=50 seed_start=1000 \\
      n_action_steps=4 out_dir=runs/sel_eval/select8
  python benchmarks/bench_selection.py --sim-eval runs/sel_eval/plain runs/sel_eval/select8
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
from sim.evaluate import seed_outcomes, wilson_interval
from sim.policies import load_policy
from vla.metrics import paired_difference
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


def sim_eval(plain: Path, select: Path, out: Path) -> None:
    """The evaluator's two summaries on the same seeds -> `sim_eval` in the results, paired by seed."""
    a, b = (json.loads((d / "summary.json").read_text()) for d in (plain, select))
    pa, pb = seed_outcomes(a), seed_outcomes(b)
    res = json.loads(out.read_text()) if out.exists() else {}
    res["sim_eval"] = {"plain": a["success_rate"], "select": b["success_rate"], "select_policy": b["policy"],
                       "episodes": a["episodes"], "select_minus_plain": paired_difference(pa, pb)}
    out.write_text(json.dumps(res, indent=1))
    print(json.dumps(res["sim_eval"], indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sim-eval", nargs=2, type=Path, default=None, metavar=("PLAIN", "SELECT"),
                    help="record the evaluator's plain vs selection summaries (no episodes run)")
    ap.add_argument("--checkpoint", default=None)
    ap.add_argument("--demos", default=None, help="EpisodeStore to fit the CFN on (by=cfn|both)")
    ap.add_argument("--episodes", type=int, default=50)
    ap.add_argument("--first-seed", type=int, default=1000)
    ap.add_argument("--delay-ticks", type=int, default=4)
    ap.add_argument("--ns", default="1,4,8,16")
    ap.add_argument("--by", default="coherence", choices=["coherence", "smooth", "cfn", "both"])
    ap.add_argument("--decay", type=float, default=1.0, help="coherence: weight decay**i on tick i after the prefix")
    ap.add_argument("--blend", type=int, default=0, help="aligned: executor.blend_ticks (ramp after a switch)")
    ap.add_argument("--tag", default="", help="suffix of the result keys (variants beside the main n1..n16)")
    ap.add_argument("--no-sync", action="store_true", help="reuse the stored sync run (same seeds)")
    ap.add_argument("--out", default=str(RESULTS / "realrobot.json"))
    args = ap.parse_args()
    if args.sim_eval:
        return sim_eval(*args.sim_eval, Path(args.out))
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
        vla = load_policy(args.checkpoint, env, seed=0)
        inner = vla if n is None else ChunkSelection(vla, n=n, by=args.by, cfn=cfn, decay=args.decay)
        policy = Timed(JointSpaceVLA(inner))
        blend = args.blend if mode == "aligned" else 0
        rs = [run_episode(env, cfg, policy, "state", mode, s, args.delay_ticks, blend) for s in seeds]
        out = summarise(rs, policy.seconds)
        print(f"{mode} n={n}: success {out['success']:.2f}, jump {out['jump']:.2f}, "
              f"latency p50 {out['latency_ms_p50']:.1f} ms ({time.time() - t0:.0f} s)", flush=True)
        return out

    if not (args.no_sync and "sync" in res):
        res["sync"] = run("sync", None)
    for n in (int(x) for x in args.ns.split(",")):
        r = run("aligned", n)
        r["minus_sync"] = paired_difference(dict(zip(seeds, res["sync"]["per_seed_success"], strict=True)),
                                            dict(zip(seeds, r["per_seed_success"], strict=True)))
        r["decay"], r["blend_ticks"] = args.decay, args.blend
        res[f"n{n}{args.tag}"] = r
    res["selection_setup"] = {"by": args.by, "delay_ticks": args.delay_ticks, "seeds": [seeds[0], seeds[-1]],
                              "checkpoint": args.checkpoint, "seconds": time.time() - t0}
    Path(args.out).write_text(json.dumps(res, indent=1))
    lines = ["# Test-time chunk selection in the executor (issue 16, item 4)", "",
             f"Command: `python benchmarks/bench_selection.py --checkpoint {args.checkpoint} --episodes "
             f"{args.episodes} --ns {args.ns} --by {args.by}"
             + (f" --blend {args.blend}" if args.blend else "") + (f" --tag {args.tag}" if args.tag else "")
             + (" --no-sync" if args.no_sync else "") + "`", "",
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
        lines.append(f"| {'sync' if key == 'sync' else 'aligned'} | {key[1:] if key != 'sync' else '-'} | "
                     f"{r['success']:.2f} | [{r['wilson95'][0]:.2f}, {r['wilson95'][1]:.2f}] | {dd} | "
                     f"{r['jump']:.2f} | {r['latency_ms_p50']:.1f} |")
    (RESULTS / f"selection{args.tag}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
