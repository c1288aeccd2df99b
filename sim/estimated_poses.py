"""A state policy's object poses from a pose estimator instead of the simulator (`vla eval CKPT
poses=ESTIMATOR`): every step, the estimator (vla.perception) reads the camera frames the episode renders
(after the camera, scene and image perturbations, as a real camera delivers them) and the state's object
features are rebuilt from its poses and the hand position the policy is given, as the policy node does
on a robot with the pose node (real/ros/pose_node.py). Experts, interveners and success checks still read
the simulator's truth.

The perturbation suite's pose kinds model an estimator's errors on top of the truth; with an estimator
its own errors are what is measured, so those kinds are left out and named (`without_pose_kinds`). How far
its readings were from the truth is kept per episode (each object's median position error over the steps),
so a summary can say whether the failed episodes were the badly estimated ones (`pose_error_summary`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import gymnasium as gym
import numpy as np

from sim.perturb import PROPRIO, has_poses
from vla.perturb import KINDS, parse_perturb
from vla.robot.objects import pose_features, poses_from_states


def without_pose_kinds(spec: str) -> tuple[str, list[str]]:
    """`spec` (vla.perturb syntax) without its pose-group kinds, as NAME:SEVERITY,... ("none" when nothing
    is left), and the kinds taken out."""
    kinds = parse_perturb(spec or "none")
    left = [k for k in kinds if KINDS[k].group == "pose"]
    kept = {k: s for k, s in kinds.items() if k not in left}
    return (",".join(f"{k}:{s:g}" for k, s in kept.items()) or "none") if left else (spec or "none"), left


def pose_error_summary(episodes: Iterable[tuple[bool, dict[str, float]]]) -> dict[str, dict[str, Any]]:
    """Per object, from (success, {object: the episode's median position error, mm}) of each episode: the
    median and 90th percentile over the episodes, and the median over the successful and the failed ones
    (None where there are none)."""
    rows = [(bool(ok), err) for ok, err in episodes if err]
    out: dict[str, dict[str, Any]] = {}
    for obj in sorted({o for _, err in rows for o in err}):
        every = np.array([err[obj] for _, err in rows if obj in err], np.float64)
        by = {ok: np.array([err[obj] for s, err in rows if s == ok and obj in err], np.float64) for ok in (True, False)}
        out[obj] = {"median": round(float(np.median(every)), 2), "p90": round(float(np.percentile(every, 90)), 2),
                    **{key: round(float(np.median(v)), 2) if len(v) else None
                       for key, v in (("success_median", by[True]), ("failure_median", by[False]))},
                    "episodes": len(every)}
    return out


class EstimatedPosesEnv(gym.Wrapper):
    """`smoothing` < 1: the task's static objects (a zone) are read as the moving average of their estimates
    since the episode began, the newest weighted `smoothing` (vla.perception.smooth); with `rest_gate_mm` > 0
    its moving objects (a cube) too, while they stay within that distance of their average."""

    def __init__(self, env: Any, estimator: str | Any, task: str = "", smoothing: float = 1.0,
                 rest_gate_mm: float = 0.0) -> None:
        super().__init__(env)
        from vla.perception.estimator import PoseEstimator
        from vla.perception.smooth import task_smoother

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
        self.task = name
        self.errors: list[np.ndarray] = []  # this episode's position errors (mm) per step, [K] each
        own = tuple(getattr(u, "cameras", ()) or ())
        missing = [c for c in self.estimator.cameras if c not in own]
        if missing:
            raise ValueError(f"poses={estimator}: the estimator reads cameras {', '.join(missing)}, which this run "
                             f"does not render (cameras: {', '.join(own) or 'none'})")

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        self.smoother.reset()
        self.errors = []
        return self._observe(obs), info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._observe(obs), reward, terminated, truncated, info

    def _observe(self, obs: dict[str, Any]) -> dict[str, Any]:
        state = np.asarray(obs["state"], np.float64)
        arm = state[:PROPRIO] if self.estimator.reads_arm else None
        poses = self.smoother(self.estimator.estimate({c: obs["images"][c] for c in self.estimator.cameras}, arm))
        rest = self.env.unwrapped.features_from_poses(poses, state[:3])
        truth = poses_from_states(self.task, state[None])[0]  # the simulator's, which the state still holds
        self.errors.append(1000.0 * np.linalg.norm(poses[:, :3] - truth[:, :3], axis=-1))
        return {**obs, "state": np.concatenate([state[:PROPRIO], rest]).astype(np.float32)}

    def episode_errors_mm(self) -> dict[str, float]:
        """Each object's median position error (mm) over this episode's readings so far ({} before any)."""
        if not self.errors:
            return {}
        e = np.stack(self.errors)
        return {o: round(float(np.median(e[:, k])), 2) for k, o in enumerate(self.estimator.objects)}
