"""How a chunk of EE deltas reaches the arm, in-process (no ROS, no executor): success of the same VLA
on the same pick_place scenes when its chunks are

  ee        stepped by the simulator (EE deltas at the measured pose: what the policy was trained on),
  stiff     turned into joint targets by the IK step taken at the previous *target* (the old adapter),
  adapter   turned into joint targets by `real.joint_vla.JointSpaceVLA` (IK at the predicted pose),
  velocity  as `adapter`, but the arm copy starts from the true joint velocities and servo targets,

the joint targets executed with `env.step_joints`, `--n-exec` actions of each chunk.

    python experiments/adapter_ab.py --checkpoint CKPT --episodes 20 --noise-seeds 1000 7
"""

from __future__ import annotations

import argparse

import mujoco
import numpy as np

from real.joint_vla import ArmKinematics, JointSpaceVLA
from sim.policies import load_policy
from vla.registry import TASKS

MODES = ("ee", "stiff", "adapter", "velocity")


def true_state_targets(kin: ArmKinematics, env, chunk: np.ndarray) -> np.ndarray:
    """The adapter's rollout, started from the simulator's true velocities and servo targets."""
    m, d, u = kin.model, kin.dyn, env.unwrapped
    mujoco.mj_resetData(m, d)
    d.qpos[kin.arm_qadr], d.qvel[kin.arm_dadr] = u.arm_qpos(), u.arm_qvel()
    d.qpos[kin.finger_qadr] = u.finger_qpos()
    d.ctrl[:] = u.data.ctrl[: m.nu]
    return kin.continue_rollout(chunk)


def run(checkpoint: str, mode: str, seeds: range, noise_seed: int, n_exec: int) -> int:
    env = TASKS.make("pick_place")
    u = env.unwrapped
    policy = load_policy(checkpoint, env, seed=noise_seed)
    kin = ArmKinematics()
    joint_policy = JointSpaceVLA(policy, kin)
    wins = 0
    for seed in seeds:
        obs, info = env.reset(seed=seed)
        policy.reset()
        done = False
        while not done:
            joints = np.append(u.arm_qpos(), u.finger_qpos().mean()).astype(np.float32)
            if mode == "adapter":
                targets = joint_policy.sample_chunk([{**obs, "state": joints}])[0][:n_exec]
            else:
                chunk = np.asarray(policy.sample_chunk([obs]))[0][:n_exec]
                targets = (kin.ee_to_joints(u.arm_qpos(), chunk) if mode == "stiff"
                           else true_state_targets(kin, env, chunk) if mode == "velocity" else None)
            for i in range(n_exec):
                if mode == "ee":
                    obs, _, term, trunc, info = env.step(chunk[i])
                else:
                    t = targets[i]
                    obs, _, term, trunc, info = env.step_joints(t[:7], float(np.clip(t[7], kin.lower[7], kin.upper[7])))
                done = bool(info["success"] or term or trunc)
                if done:
                    break
        wins += bool(info["success"])
    return wins


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="torch checkpoint folder (image-mode pick_place VLA)")
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--noise-seeds", type=int, nargs="+", default=[1000, 7])
    ap.add_argument("--n-exec", type=int, default=8)
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    args = ap.parse_args()
    seeds = range(1000, 1000 + args.episodes)
    for mode in args.modes:
        wins = sum(run(args.checkpoint, mode, seeds, s, args.n_exec) for s in args.noise_seeds)
        print(f"{mode:9s} {wins}/{args.episodes * len(args.noise_seeds)}", flush=True)


if __name__ == "__main__":
    main()
