"""Does compensating a known actuation delay (`action_delay=N`: each chunk starts N actions in) help the main
job's policy under `action_latency:N`? Tune seeds only: this decides a default, it is not a report figure.

Settings, each on the same `--episodes` tune seeds with the job's execution (temporal ensemble 0.3, a chunk every
2 steps): clean, 1- and 2-step latency with and without the compensation, and the compensation with no latency
(what it costs when the delay it assumes is not there). `--arm-only K`: the same loop in this process on the
first K seeds with only the arm's actions shifted (the gripper from the chunk's first action), under a 1-step
latency, against no shift.

    python experiments/action_delay.py --policy runs/main65/refine/iter_02/train/checkpoints/step_00000500 \\
        --out runs/s8/delay --arm-only 30

Writes experiments/results/action_delay.json / .md. Resumable (a finished evaluation is reused).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

SETTINGS = {"clean": ("none", 0), "lat1": ("action_latency:1", 0), "lat1_d1": ("action_latency:1", 1),
            "clean_d1": ("none", 1), "lat2": ("action_latency:2", 0), "lat2_d2": ("action_latency:2", 2)}
RESULTS = Path(__file__).parent / "results"


class ArmShift:
    """A policy whose chunks have the arm's actions `d` steps ahead and the gripper's as they are."""

    def __init__(self, policy: Any, d: int) -> None:
        self.policy, self.d = policy, d

    def reset(self, seed: int | None = None) -> None:
        self.policy.reset(seed)

    def sample_chunk(self, obs: Any) -> np.ndarray:
        c = np.asarray(self.policy.sample_chunk(obs)).copy()
        if self.d:
            c[:, :-self.d, :-1] = c[:, self.d:, :-1]
        return c


def arm_only(policy_path: str, seeds: list[int]) -> dict[str, list[bool]]:
    import sim  # noqa: F401 (registers the tasks)
    from sim.perturb import perturbed
    from vla.policy.ensemble import ChunkSchedule
    from vla.policy.policy import load_torch_policy
    from vla.registry import TASKS

    policy = load_torch_policy(policy_path)
    out: dict[str, list[bool]] = {}
    for name, d in (("lat1", 0), ("lat1_arm_d1", 1)):
        wins = []
        for seed in seeds:
            env = perturbed(TASKS.make("pick_place", obs_mode="state", image_size=84), "action_latency:1", "state",
                            "pick_place")
            obs, info = env.reset(seed=seed)
            pol = ArmShift(policy, d)
            pol.reset(0)
            schedule = ChunkSchedule(4, 0.3, 2)
            for _ in range(200):
                a, _ = schedule.action(pol, obs)
                obs, _, term, trunc, info = env.step(a)
                schedule.executed(True)
                if term or trunc:
                    break
            wins.append(bool(info.get("success")))
            env.close()
        out[name] = wins
    return out


def main() -> None:
    from sim.evaluate import EvalConfig, run_evaluation, seed_outcomes
    from vla.metrics import format_paired, paired_difference

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--episodes", type=int, default=100)
    ap.add_argument("--arm-only", type=int, default=0)
    args = ap.parse_args()
    runs: dict[str, dict[int, bool]] = {}
    for name, (perturb, delay) in SETTINGS.items():
        done = args.out / name / "summary.json"
        if not done.exists():
            run_evaluation(EvalConfig(task="pick_place", policy=args.policy, episodes=args.episodes,
                                      seed_range="tune", n_action_steps=4, temporal_ensemble=0.3,
                                      temporal_ensemble_every=2, videos=0, perturb=perturb, action_delay=delay,
                                      out_dir=str(args.out / name)))
        runs[name] = seed_outcomes(json.loads(done.read_text()))
    pairs = {"lat1_d1 - lat1": ("lat1", "lat1_d1"), "lat2_d2 - lat2": ("lat2", "lat2_d2"),
             "clean_d1 - clean": ("clean", "clean_d1")}
    data: dict[str, Any] = {"policy": args.policy, "seed_range": "tune", "episodes": args.episodes,
                            "success": {n: float(np.mean(list(o.values()))) for n, o in runs.items()},
                            "paired": {k: paired_difference(runs[a], runs[b]) for k, (a, b) in pairs.items()}}
    if args.arm_only:
        seeds = sorted(runs["clean"])[: args.arm_only]
        arm = arm_only(args.policy, seeds)
        data["arm_only"] = {"seeds": len(seeds), **{k: int(sum(v)) for k, v in arm.items()}}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "action_delay.json").write_text(json.dumps(data, indent=1))
    lines = ["# Compensating a known actuation delay (tune seeds)", "", f"Policy `{args.policy}`, {args.episodes} "
             "tune seeds, the job's execution. Command: the docstring of `experiments/action_delay.py`.", "",
             "| setting | perturbation | action_delay | success |", "|---|---|---|---|"]
    lines += [f"| {n} | {p} | {d} | {data['success'][n]:.2f} |" for n, (p, d) in SETTINGS.items()]
    lines += ["", *[f"- {k}: {format_paired(v)}" for k, v in data["paired"].items()]]
    if "arm_only" in data:
        a = data["arm_only"]
        lines += [f"- only the arm's actions shifted, 1-step latency, first {a['seeds']} seeds: {a['lat1_arm_d1']}/"
                  f"{a['seeds']} against {a['lat1']}/{a['seeds']} unshifted"]
    (RESULTS / "action_delay.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
