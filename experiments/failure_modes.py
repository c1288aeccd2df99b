"""How a pick-and-place policy fails, episode by episode (why the person's
corrections do not lift the main job's camera policy; `results/main_job_notes.md`).

Runs a checkpoint without a person on the given seeds and sorts every episode into one outcome:

- `success`;
- `slipped`: the object was held, then lost while the policy still commanded the gripper closed;
- `released`: held, then lost on a step the policy commanded it open (let go away from the goal);
- `never_held`: the object was never grasped;
- `other`: held when time ran out, or lost and picked up again without finishing.

At the first step the object is held it records the grasp: the object's offset from the grip site in
the hand's frame (x along the pads' travel, z up the fingers), the yaw between hand and cube (mod 90
degrees) and the hand's tilt from vertical, so slipped and held grasps can be compared. It also
asks the task's scripted expert, at the policy's first close command, whether it would
close there too (`expert_agrees_at_close`): the test of a person who steps in on a bad grasp
rather than after the drop.

    python experiments/failure_modes.py --ckpt runs/main26/train/checkpoints/step_00007000 \\
        --seeds 1000-1199 --out experiments/results/failure_modes_main26.json

For `sort` the object is the goal's cube: a failure that never held it may have taken
another cube. Every lost grasp also records how far the object then was from its goal (`lost_goal_mm`,
horizontal), which tells a drop in transit from a release just outside the zone. `--ensemble RATE
--every K --noise-scale 0` executes the policy as the main job does (the temporal ensemble), instead of
`--n-action-steps` at a time:

    python experiments/failure_modes.py --task sort --ensemble 0.3 --every 2 --noise-scale 0 \\
        --ckpt runs/bench_language/sort/train_recipe_s3/checkpoints/step_00020000 --seeds 1000-1099

`--perturb SPEC` runs the episodes under a perturbation (`vla.perturb` syntax or a preset, as `vla eval perturb=`;
a preset's kinds that cannot apply to a camera policy are left out, as the evaluator does), e.g. how the
camera-only policy fails under `realistic`:

    python experiments/failure_modes.py --ensemble 0.3 --every 2 --perturb realistic --seeds 1000000-1000199 \
        --ckpt runs/s20/cam/c_vis_s0/train/checkpoints/step_00007000

Native tasks only (it reads the object through `sim.intervener.task_view`); one process of one thread,
~1-2 s an episode here. It executes a checkpoint as the evaluator does (`vla.policy.ensemble.ChunkSchedule`,
one thread), so its episodes are the evaluator's on the same seeds.
"""

from __future__ import annotations

import argparse
import collections
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUTCOMES = ("success", "slipped", "released", "never_held", "other")


def classify(held: list[bool], grip_cmd: list[float], success: bool) -> tuple[str, int | None]:
    """The episode's outcome from its per-step `held` flags and the policy's gripper commands
    (`grip_cmd[t]` is executed after `held[t]` is read), and the step the object was first lost."""
    if success:
        return "success", None
    lost = next((t for t in range(1, len(held)) if held[t - 1] and not held[t]), None)
    if lost is None:
        return ("other" if any(held) else "never_held"), None
    if any(held[lost:]):
        return "other", lost
    return ("slipped" if grip_cmd[lost - 1] > 0 else "released"), lost


def grasp_geometry(env: Any) -> dict[str, float]:
    """The held (active) object's pose relative to the hand."""
    from sim.intervener import grasp_yaw_error, task_view

    u = env.unwrapped
    r = u.eef_mat()
    local = r.T @ (task_view(u)[0] - u.eef_pos())
    return {"x_mm": round(1000 * float(local[0]), 1), "y_mm": round(1000 * float(local[1]), 1),
            "z_mm": round(1000 * float(local[2]), 1), "yaw_deg": round(float(grasp_yaw_error(u)), 1),
            "tilt_deg": round(float(np.degrees(np.arccos(np.clip(-r[2, 2], -1.0, 1.0)))), 1)}


def run_episode(env: Any, policy: Any, expert_peek: Any, seed: int, n_action_steps: int, horizon: int,
                ensemble: float | None = None, every: int = 1) -> dict[str, Any]:
    from sim.intervener import hand_object_yaw, task_view
    from vla.policy.ensemble import ChunkSchedule

    obs, info = env.reset(seed=seed)
    start_yaw = hand_object_yaw(env.unwrapped)
    policy.reset(seed)  # as the evaluator: an episode's noise does not depend on the episodes before it
    schedule = ChunkSchedule(n_action_steps, ensemble, every)  # the evaluator's: the same episodes
    held, grip, first_close, grasp, lost_goal = [], [], None, None, []
    for _ in range(horizon):
        a, _queried = schedule.action(policy, obs)
        pos, goal, h = task_view(env.unwrapped)
        if held and held[-1] and not h:
            lost_goal.append(round(1000 * float(np.linalg.norm(np.asarray(pos)[:2] - np.asarray(goal)[:2])), 1))
        if first_close is None and a[-1] > 0 and not h:
            first_close = bool(expert_peek(obs, info)[-1] > 0)
        if h and grasp is None:
            grasp = grasp_geometry(env)
        held.append(h)
        grip.append(float(a[-1]))
        obs, _, term, trunc, info = env.step(a)
        schedule.executed()
        if term or trunc or info.get("success"):
            break
    outcome, lost = classify([*held, bool(task_view(env.unwrapped)[2])], [*grip, 0.0], bool(info.get("success")))
    return {"seed": seed, "outcome": outcome, "lost_at": lost, "lost_goal_mm": lost_goal, "length": len(held),
            "start_yaw_deg": None if start_yaw is None else round(fold_yaw(np.degrees(start_yaw)), 1),
            "expert_agrees_at_close": first_close, "grasp": grasp}


def fold_yaw(deg: float) -> float:
    """An angle between hand and cube in degrees, folded to [-45, 45) (a cube looks the same every 90)."""
    return float((deg + 45.0) % 90.0 - 45.0)


def turn_summary(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """Does the policy turn its hand to the object? The correlation between how far the object starts
    turned from the hand and how far off the first grasp is (1: the hand grasps as it started, 0: it
    turns), and the success rate by the starting angle."""
    pairs = [(abs(e["start_yaw_deg"]), abs(e["grasp"]["yaw_deg"])) for e in episodes
             if e.get("grasp") and e.get("start_yaw_deg") is not None]
    out: dict[str, Any] = {"grasp_yaw_follows_start_r": round(float(np.corrcoef(np.array(pairs).T)[0, 1]), 3)
                           if len(pairs) > 2 else None}
    for lo, hi in ((0, 15), (15, 30), (30, 46)):
        sel = [e for e in episodes if e.get("start_yaw_deg") is not None and lo <= abs(e["start_yaw_deg"]) < hi]
        rate = round(float(np.mean([e["outcome"] == "success" for e in sel])), 3) if sel else None
        out[f"success_start_yaw_{lo}_{min(hi, 45)}"] = (rate, len(sel))
    return out


def grasp_summary(episodes: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Median |offset| / angle of the first grasp per outcome."""
    out: dict[str, dict[str, float]] = {}
    for o in OUTCOMES:
        g = [e["grasp"] for e in episodes if e["outcome"] == o and e["grasp"]]
        if g:
            out[o] = {"n": len(g), **{k: round(float(np.median([abs(x[k]) for x in g])), 1) for k in g[0]}}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--task", default="pick_place", help="a native task (pick_place, sort, ...)")
    ap.add_argument("--ensemble", type=float, default=None, help="temporal ensemble rate (default: off)")
    ap.add_argument("--every", type=int, default=1, help="with --ensemble: a new chunk every this many steps")
    ap.add_argument("--noise-scale", type=float, default=None, help="the checkpoint's inference noise instead")
    ap.add_argument("--seeds", default="1000-1199", help="FIRST-LAST")
    ap.add_argument("--n-action-steps", type=int, default=4)
    ap.add_argument("--horizon", type=int, default=200)
    ap.add_argument("--image-size", type=int, default=84)
    ap.add_argument("--perturb", default="none", help="a perturbation (vla.perturb syntax or a preset)")
    ap.add_argument("--out", default=None, help="JSON file (default: print only)")
    args = ap.parse_args()

    import torch

    from sim.intervener import ExpertIntervener
    from sim.perturb import perturbed, preset_applicable
    from sim.policies import load_policy
    from vla.registry import TASKS

    # One thread, as the evaluator's workers (sim.evaluate): with two, a convolution summed in another order
    # changed 1-2 of 100 sort episodes from the evaluator's (a time-out became a success).
    torch.set_num_threads(1)
    first, last = (int(x) for x in args.seeds.split("-"))
    env = TASKS.make(args.task, image_size=args.image_size)
    spec, left_out = preset_applicable(args.perturb, env.unwrapped, "image", args.task)
    env = perturbed(env, spec, "image", args.task)
    policy = load_policy(args.ckpt, env, seed=first, noise_scale=args.noise_scale)
    person = ExpertIntervener(env, mode="hg_dagger")  # only for its side-effect-free look at the expert
    t0 = time.time()
    episodes = []
    for seed in range(first, last + 1):
        person.reset()
        episodes.append(run_episode(env, policy, person._expert_action_peek, seed, args.n_action_steps, args.horizon,
                                    args.ensemble, args.every))
    counts = collections.Counter(e["outcome"] for e in episodes)
    agree = collections.Counter((e["expert_agrees_at_close"], e["outcome"]) for e in episodes)
    lost_goal = [d for e in episodes if e["outcome"] != "success" for d in e["lost_goal_mm"]]
    res = {"checkpoint": args.ckpt, "task": args.task, "ensemble": args.ensemble, "every": args.every,
           "noise_scale": args.noise_scale, "perturb": spec, "perturb_left_out": sorted(left_out),
           "seeds": [first, last], "episodes": len(episodes),
           "outcomes": {k: counts.get(k, 0) for k in OUTCOMES},
           "expert_agrees_at_close": {f"{'agrees' if a else 'says_open' if a is False else 'no_close'}/{o}": n
                                      for (a, o), n in sorted(agree.items(), key=str)},
           "grasp_by_outcome": grasp_summary(episodes),
           "turn": turn_summary(episodes),
           "lost_at_median": float(np.median([e["lost_at"] for e in episodes if e["lost_at"] is not None] or [np.nan])),
           "failed_lost_goal_mm": sorted(lost_goal),
           "seconds": round(time.time() - t0, 1), "per_episode": episodes}
    print(json.dumps({k: v for k, v in res.items() if k != "per_episode"}, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
