"""Where a policy and its DAgger labels disagree (main_job_notes.md): the policy acts on a
task's seeds, the scripted expert labels each step it takes (`ExpertIntervener.label`), nobody takes
over; per action dimension, how far the labels are from the actions and how often the label turns the
hand (|rotation| > 0.5) or rises (z > 0.5) where the policy goes down.

    python experiments/dagger_labels.py --ckpt runs/main28/train/checkpoints/step_00007000 --seeds 1000-1019
    python experiments/dagger_labels.py --ckpt runs/bench_wm/inputs/pretrain/d15/checkpoints/step_00003000 \
        --obs-mode state --n-action-steps 8 --seeds 100000-100019
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from sim.intervener import ExpertIntervener
from sim.policies import load_policy, make_expert
from vla.policy.ensemble import ChunkSchedule
from vla.registry import TASKS


def episode(env, policy, person: ExpertIntervener, seed: int, n_action_steps: int
            ) -> tuple[bool, np.ndarray, np.ndarray]:
    """(success, the actions the policy took, the expert's labels of them)."""
    obs, info = env.reset(seed=seed)
    policy.reset(seed)
    person.reset()
    person.expert.reset(seed)
    schedule = ChunkSchedule(n_action_steps)
    acts, labels = [], []
    done = False
    while not done:
        action, _ = schedule.action(policy, obs)
        info["policy_action"] = action
        acts.append(action)
        labels.append(person.label(obs, info))
        obs, _, term, trunc, info = env.step(action)
        schedule.executed()
        done = bool(term or trunc or info.get("success"))
    return bool(info.get("success")), np.array(acts), np.array(labels)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--task", default="pick_place")
    ap.add_argument("--seeds", default="1000-1019", help="FIRST-LAST")
    ap.add_argument("--n-action-steps", type=int, default=4)
    ap.add_argument("--obs-mode", default="image", help="image | state (then no cameras)")
    ap.add_argument("--out", default=None, help="JSON file for the figures")
    args = ap.parse_args()
    first, last = map(int, args.seeds.split("-"))
    env = TASKS.make(args.task, **({"obs_mode": "state", "cameras": ()} if args.obs_mode == "state" else {}))
    policy = load_policy(args.ckpt, env, noise=0.0, skill=1.0, seed=first, noise_scale=None)
    person = ExpertIntervener(env, make_expert(env, seed=first), mode="hg_dagger")
    rows = [episode(env, policy, person, s, args.n_action_steps) for s in range(first, last + 1)]
    a = np.concatenate([r[1] for r in rows])
    lab = np.concatenate([r[2] for r in rows])
    ok = np.concatenate([np.full(len(r[1]), r[0]) for r in rows])
    out = {"ckpt": args.ckpt, "task": args.task, "seeds": args.seeds, "episodes": len(rows),
           "success": float(np.mean([r[0] for r in rows])), "steps": len(a),
           "mean_abs_difference_per_dim": np.abs(lab - a).mean(0).round(3).tolist(),
           "label_turns_share": float((np.abs(lab[:, 3:6]) > 0.5).any(1).mean()),
           "policy_turns_share": float((np.abs(a[:, 3:6]) > 0.5).any(1).mean()),
           "label_rises_where_policy_descends_share": float(((lab[:, 2] > 0.5) & (a[:, 2] < 0)).mean()),
           "gripper_disagreement_share": float((np.sign(lab[:, -1]) != np.sign(a[:, -1])).mean()),
           "mean_abs_difference_successful_episodes": np.abs(lab - a)[ok].mean(0).round(3).tolist()}
    print(json.dumps(out, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
