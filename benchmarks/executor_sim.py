"""The chunk executor driving the simulator's arm in simulated time: no ROS, no wall clock.

The deployment benchmark (`bench_deploy.py`) measures the whole ROS 2 path on a shared machine,
where timing noise, DDS and a loaded CPU blur what the executor and the joint-space adapter do.
Here the same `ChunkExecutor`, `SafetyFilter` and `JointSpaceVLA` run against `PickPlaceEnv`
(`step_joints`, one physics step per control tick) with a `SteppedWorker` that delivers each chunk
exactly `--delay-ticks` ticks after its trigger, on a `FakeClock`: every run is deterministic and
takes CPU time only for the simulation and the policy.

Modes: the executor's, and `simulator`: the policy's own setting (EE deltas stepped by the
simulator, 8 actions per chunk, no delay), the reference for success and for the jump.
Variants (asynchronous modes):
  state  the observation carries the measured joint velocities, and (aligned / rtc) the executor
         adds the command the arm runs next: the adapter's rollout starts from the moving arm;
  rest   both removed: the rollout starts from the measured joints at rest (the adapter before).

    python benchmarks/executor_sim.py --checkpoint CKPT --episodes 20 --delay-ticks 4 \
        --modes sync aligned --variants state rest --out benchmarks/results/executor_sim.md
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from real.config import DeployConfig, load_deploy_config
from real.executor import ChunkExecutor, action_changes
from real.joint_vla import JointSpaceVLA
from real.safety import SafetyFilter
from real.stages import NODE_CONFIG
from real.testing import SteppedWorker
from real.worker import FakeClock
from sim.perturb import SceneEffects, inapplicable
from sim.policies import load_policy
from vla.perturb import Perturber, parse_perturb
from vla.registry import TASKS
from vla.robot.arm import ARM_REACH_M, JOINT_UNIT_RAD

VARIANTS = ("state", "rest")
HORIZON = 200  # ticks, as the evaluator's and the bridge's pick_place episodes


class WithoutMotion:
    """Hands the adapter observations without `velocity` and `command` (the `rest` variant)."""

    def __init__(self, policy: JointSpaceVLA) -> None:
        self.policy = policy

    def sample_chunk(self, obs_batch, prefix=None, guidance=None):
        stripped = [{k: v for k, v in o.items() if k not in ("velocity", "command")} for o in obs_batch]
        return self.policy.sample_chunk(stripped, prefix=prefix, guidance=guidance)

    def reset(self) -> None:
        self.policy.reset()


# main's perturbation, as the bridge would apply it (none unless --perturb)
PERTURB: dict[str, Any] = {"perturber": Perturber({}), "scene": None}


def set_perturbation(env: Any, spec: str) -> None:
    """What every later episode's bridge applies: `spec` (vla.perturb) as the ROS bridge and `vla eval` read it.
    Raises ValueError (one line) for a kind this image-mode policy cannot meet (object poses)."""
    kinds = parse_perturb(spec)
    for kind in kinds:
        why = inapplicable(kind, env.unwrapped, "image", "pick_place")
        if why:
            raise ValueError(why)
    PERTURB["perturber"] = Perturber(kinds)
    PERTURB["scene"] = SceneEffects(env.unwrapped, kinds)


def run_episode(env: Any, cfg: DeployConfig, policy: JointSpaceVLA, variant: str, mode: str, seed: int,
                delay_ticks: int, blend_ticks: int = 0, **executor: Any) -> dict[str, float]:
    """One episode; `executor`: further `ExecutorConfig` fields (e.g. ensemble_rate)."""
    u = env.unwrapped
    clock = FakeClock()
    perturber, scene = PERTURB["perturber"], PERTURB["scene"]
    perturber.reset(seed)  # the bridge's perturbations (vla.perturb), in joint space as the bridge applies them
    if scene is not None:
        scene.before_reset(perturber)
    obs, info = env.reset(seed=seed)
    if scene is not None and scene.after_reset(perturber):
        obs = u._obs()
    policy.reset()
    policy.vla.reset(seed=seed)  # the episode's noise from its own seed, as the evaluator does
    state = {"obs": obs, "info": info}
    lower, upper = cfg.limits.lower, np.nextafter(cfg.limits.upper.astype(np.float32), -np.inf)

    def observe():
        o = state["obs"]
        # clipped to the limits, as the bridge reports them (float32 open fingers round past 0.045)
        arm, finger = perturber.joint_state(u.arm_qpos(), u.finger_qpos().mean(), ARM_REACH_M)
        q = np.clip(np.append(arm, finger), lower, upper)
        v = np.append(u.arm_qvel(), u.finger_qvel().mean())
        return {"images": perturber.images(o["images"]), "state": q.astype(np.float32),
                "velocity": v.astype(np.float32),
                "instruction": o["instruction"], "timestamp": clock.now()}

    def send(command: np.ndarray) -> None:
        if perturber.kinds:
            current = np.append(u.arm_qpos(), u.finger_qpos().mean())
            command = np.clip(perturber.joint_target(command, current, JOINT_UNIT_RAD), lower, upper)
        state["obs"], _, _, _, state["info"] = env.step_joints(command[:7], float(command[7]))

    safety = SafetyFilter(cfg.limits, 1.0 / cfg.executor.rate_hz)
    safety.reset(observe()["state"].astype(np.float64))
    ex_cfg = replace(cfg.executor, mode=mode, initial_latency_ticks=delay_ticks, blend_ticks=blend_ticks, **executor)
    worker = SteppedWorker(WithoutMotion(policy) if variant == "rest" else policy, delay_ticks, clock)
    ex = ChunkExecutor(worker, observe, send, safety, ex_cfg, clock)
    ticks = 0
    for k in range(10 * HORIZON):
        clock.sleep_until(k * ex.period)
        rec = ex.tick(k, scheduled=k * ex.period)
        ticks += rec.action is not None or ticks > 0  # the episode's clock starts at the first action
        if state["info"]["success"] or ticks >= HORIZON:
            break
    steps, switches = action_changes(list(ex.records))
    med = float(np.median(steps)) if len(steps) else float("nan")
    return {"success": bool(state["info"]["success"]), "ticks": ticks,
            "jump_mean": float(np.mean(switches) / med) if len(switches) else float("nan"),
            "starved": int(ex.stats()["starved_ticks"]), "violations": int(safety.n_violations)}


def run_reference(env: Any, policy: JointSpaceVLA, seed: int, n_exec: int = 8) -> dict[str, float]:
    """What the policy was trained and evaluated on: EE deltas stepped by the simulator, `n_exec`
    actions per chunk, no delay. The jump is taken on the joint targets the simulator's own IK
    sends (its actuator controls), so it compares with the executor's joint-space figure."""
    u = env.unwrapped
    obs, info = env.reset(seed=seed)
    policy.vla.reset(seed=seed)
    targets, chunk_ids, ticks = [], [], 0
    while ticks < HORIZON and not info["success"]:
        chunk = np.asarray(policy.vla.sample_chunk([obs]))[0]
        for a in chunk[:n_exec]:
            obs, _, _, _, info = env.step(a)
            targets.append(np.append(u.data.ctrl[:7], u.data.ctrl[7]))
            chunk_ids.append(len(chunk_ids) and chunk_ids[-1] + (ticks % n_exec == 0))
            ticks += 1
            if info["success"] or ticks >= HORIZON:
                break
    t = np.asarray(targets)
    steps = np.linalg.norm(np.diff(t, axis=0), axis=1)
    switch = np.diff(np.asarray(chunk_ids)) != 0
    med = float(np.median(steps))
    return {"success": bool(info["success"]), "ticks": ticks,
            "jump_mean": float(steps[switch].mean() / med) if switch.any() else float("nan"),
            "starved": 0, "violations": 0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="torch checkpoint folder (image-mode pick_place VLA)")
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--noise-scale", type=float, default=None, help="the policy's noise_scale instead of the "
                    "checkpoint's (0: every chunk from the prior's mean)")
    ap.add_argument("--first-seed", type=int, default=1000)
    ap.add_argument("--delay-ticks", type=int, default=4)
    ap.add_argument("--modes", nargs="+", default=["simulator", "sync", "aligned"],
                    help="executor modes, and `simulator` (the policy's own setting, see run_reference)")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--perturb", default="none", help="vla.perturb spec (a preset or NAME:SEVERITY,...): what the "
                    "bridge would apply; pose perturbations do not apply (this policy reads the cameras)")
    args = ap.parse_args()
    env = TASKS.make("pick_place")  # reset per episode, as the evaluator's workers do
    try:
        set_perturbation(env, args.perturb)
    except ValueError as e:
        ap.error(f"--perturb {args.perturb}: {e}")
    cfg = load_deploy_config(NODE_CONFIG)
    policy = JointSpaceVLA(load_policy(args.checkpoint, env, seed=0, noise_scale=args.noise_scale))
    t0 = time.time()
    rows = []
    for mode in args.modes:
        for variant in args.variants if mode not in ("sync", "simulator") else ["-"]:  # sync starts at rest
            seeds = range(args.first_seed, args.first_seed + args.episodes)
            rs = ([run_reference(env, policy, s) for s in seeds] if mode == "simulator"
                  else [run_episode(env, cfg, policy, variant, mode, s, args.delay_ticks) for s in seeds])
            wins = [r for r in rs if r["success"]]
            row = (f"| {mode} | {variant} | {len(wins)}/{len(rs)} | "
                   f"{np.mean([r['ticks'] for r in wins]) / 20 if wins else float('nan'):.2f} | "
                   f"{np.nanmean([r['jump_mean'] for r in rs]):.2f} | {sum(r['starved'] for r in rs)} | "
                   f"{sum(r['violations'] for r in rs)} |")
            rows.append(row)
            print(row, flush=True)
    cmd = (f"python benchmarks/executor_sim.py --checkpoint {args.checkpoint} --episodes {args.episodes} "
           f"--delay-ticks {args.delay_ticks} --modes {' '.join(args.modes)} --variants {' '.join(args.variants)}"
           + (f" --perturb {args.perturb}" if args.perturb != "none" else ""))
    text = "\n".join([
        "# Chunk executor against the simulator's arm, simulated time (no ROS)", "",
        f"Command: `{cmd}`", "",
        f"pick_place seeds {args.first_seed}..{args.first_seed + args.episodes - 1}, each chunk delivered "
        f"{args.delay_ticks} ticks ({args.delay_ticks * 50} ms) after its trigger, executor and limits from "
        f"`configs/deploy/native_arm.yaml`, {time.time() - t0:.0f} s. Jump = action change at a chunk switch / "
        "median per-step change (joint space, mean over episodes); completion in seconds over successes.", "",
        "| mode | adapter start | success | completion s | jump mean | starved ticks | safety violations |",
        "|---|---|---|---|---|---|---|", *rows, ""])
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
