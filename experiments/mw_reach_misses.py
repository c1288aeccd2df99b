"""How a Meta-World reach policy misses (language_metaworld.md): per held-out seed, the goal, the
hand's closest approach to it and the error vector there (x, y, z in metres).

    python experiments/mw_reach_misses.py --ckpt runs/bl_mw/mw/train/checkpoints/step_00010000 --seeds 1000-1011
"""

from __future__ import annotations

import argparse

import numpy as np

from sim.policies import load_policy
from vla.policy.ensemble import ChunkSchedule
from vla.registry import TASKS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--seeds", default="1000-1011", help="FIRST-LAST")
    ap.add_argument("--cameras", default="corner2,behindGripper")
    ap.add_argument("--n-action-steps", type=int, default=4)
    args = ap.parse_args()
    first, last = map(int, args.seeds.split("-"))
    env = TASKS.make("mw_reach", cameras=tuple(args.cameras.split(",")), image_size=84)
    policy = load_policy(args.ckpt, env, noise=0.0, skill=1.0, seed=first, noise_scale=None)
    for seed in range(first, last + 1):
        obs, info = env.reset(seed=seed)
        policy.reset(seed)
        goal = env.unwrapped.raw_obs[36:39].copy()
        schedule = ChunkSchedule(args.n_action_steps)
        best, err, done = np.inf, np.zeros(3), False
        while not done:
            action, _ = schedule.action(policy, obs)
            obs, _, term, trunc, info = env.step(action)
            schedule.executed()
            d = env.unwrapped.raw_obs[:3] - goal
            if np.linalg.norm(d) < best:
                best, err = float(np.linalg.norm(d)), d
            done = bool(term or trunc or info["success"])
        print(f"seed {seed}: success {info['success']}, goal {np.round(goal, 2)}, closest {best:.3f} m, "
              f"error there (x, y, z) {np.round(err, 3)}")


if __name__ == "__main__":
    main()
