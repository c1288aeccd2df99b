"""A state policy's object poses from a pose estimator instead of the simulator (`vla eval CKPT
poses=ESTIMATOR`): every step, the estimator (vla.perception) reads the camera frames the episode renders
(after the camera, scene and image perturbations, as a real camera delivers them) and the state's object
features are rebuilt from its poses and the hand position the policy is given, as the policy node does
on a robot with the pose node (real/ros/pose_node.py). Experts, interveners and success checks still read
the simulator's truth.

The perturbation suite's pose kinds model an estimator's errors on top of the truth; with an estimator
its own errors are what is measured, so those kinds are left out and named (`without_pose_kinds`)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from sim.perturb import PROPRIO, has_poses
from vla.perturb import KINDS, parse_perturb


def without_pose_kinds(spec: str) -> tuple[str, list[str]]:
    """`spec` (vla.perturb syntax) without its pose-group kinds, as NAME:SEVERITY,... ("none" when nothing
    is left), and the kinds taken out."""
    kinds = parse_perturb(spec or "none")
    left = [k for k in kinds if KINDS[k].group == "pose"]
    kept = {k: s for k, s in kinds.items() if k not in left}
    return (",".join(f"{k}:{s:g}" for k, s in kept.items()) or "none") if left else (spec or "none"), left


class EstimatedPosesEnv(gym.Wrapper):
    """`smoothing` < 1: the task's static objects (a zone) are read as the moving average of their estimates
    since the episode began, the newest weighted `smoothing` (vla.perception.smooth); with `rest_gate_mm` > 0
    its moving objects (a cube) too, while they stay within that distance of their average."""

    def __init__(self, env: Any, estimator: str | Any, task: str = "", smoothing: float = 1.0,
                 rest_gate_mm: float = 0.0) -> None:
        super().__init__(env)
        from vla.perception.estimator import PoseEstimator
        from vla.perception.smooth import task_smoother
        from vla.robot.objects import pose_features

        u = env.unwrapped
        name = task or getattr(u, "TASK", type(u).__name__)
        self.estimator = PoseEstimator.load(estimator) if isinstance(estimator, str) else estimator
        if not has_poses(u):
            raise ValueError(f"poses={estimator}: task '{name}' does not compute its state from object poses "
                             "(pick_place and pick_place_square do)")
        objects, _ = pose_features(name)
        if tuple(objects) != self.estimator.objects:
            raise ValueError(f"poses={estimator}: the estimator reads {list(self.estimator.objects)}, task "
                             f"'{name}' needs {list(objects)}")
        self.smoother = task_smoother(name, self.estimator.objects, smoothing, rest_gate_mm)
        own = tuple(getattr(u, "cameras", ()) or ())
        missing = [c for c in self.estimator.cameras if c not in own]
        if missing:
            raise ValueError(f"poses={estimator}: the estimator reads cameras {', '.join(missing)}, which this run "
                             f"does not render (cameras: {', '.join(own) or 'none'})")

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        self.smoother.reset()
        return self._observe(obs), info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._observe(obs), reward, terminated, truncated, info

    def _observe(self, obs: dict[str, Any]) -> dict[str, Any]:
        state = np.asarray(obs["state"], np.float64)
        arm = state[:PROPRIO] if self.estimator.reads_arm else None
        poses = self.smoother(self.estimator.estimate({c: obs["images"][c] for c in self.estimator.cameras}, arm))
        rest = self.env.unwrapped.features_from_poses(poses, state[:3])
        return {**obs, "state": np.concatenate([state[:PROPRIO], rest]).astype(np.float32)}
