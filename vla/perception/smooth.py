"""Averaging an estimator's readings of the objects that do not move (pure math, no torch).

A pose estimator's error on a static object (pick_place's zone) changes from frame to frame as the arm
moves across it, and is largest when the hand hides it, which is when the policy places the cube on it.
An exponential moving average of its position (weight `alpha` on the newest reading) carries the
unoccluded frames' estimate through the occlusion. Moving objects pass through untouched. Ours fills a gap:
a model-based tracker (FoundationPose, arXiv 2312.08344) tracks every object; a per-frame regressor has no
memory but this.
"""

from __future__ import annotations

import numpy as np


def ema_update(mean: np.ndarray | None, reading: np.ndarray, alpha: float) -> np.ndarray:
    """The moving average after one more reading (the reading itself when there is no average yet)."""
    r = np.asarray(reading, np.float64)
    return r.copy() if mean is None else (1.0 - alpha) * np.asarray(mean, np.float64) + alpha * r


def gated_update(mean: np.ndarray | None, reading: np.ndarray, alpha: float, gate: float) -> np.ndarray:
    """The moving average of an object that may move: restarted at the reading when the reading is more than
    `gate` (metres) from the average (it moved), averaged otherwise (it is at rest; what differs is the
    estimator's frame-to-frame error)."""
    r = np.asarray(reading, np.float64)
    if mean is None or float(np.linalg.norm(r - np.asarray(mean, np.float64))) > gate:
        return r.copy()
    return ema_update(mean, r, alpha)


class StaticSmoother:
    """poses [K, 7] -> poses with the `static` objects' positions averaged over the readings since `reset`,
    and the `rest` objects' (ones that move, such as a cube) averaged while they stay within `gate` metres
    of their average (gated_update)."""

    def __init__(self, objects: tuple[str, ...], static: tuple[str, ...], alpha: float,
                 rest: tuple[str, ...] = (), gate: float = 0.0) -> None:
        if not 0 < alpha <= 1:
            raise ValueError(f"smoothing alpha must be in (0, 1] (1: off), got {alpha}")
        unknown = [o for o in (*static, *rest) if o not in objects]
        if unknown:
            raise ValueError(f"object '{unknown[0]}' is not among the estimator's objects {list(objects)}")
        if rest and not gate > 0:
            raise ValueError(f"smoothing objects at rest needs a gate > 0 (metres), got {gate}")
        self.index = [objects.index(o) for o in static]
        self.rest = [objects.index(o) for o in rest if o not in static]
        self.alpha, self.gate = alpha, gate
        self.mean: dict[int, np.ndarray] = {}

    def reset(self) -> None:
        self.mean.clear()

    def __call__(self, poses: np.ndarray) -> np.ndarray:
        out = np.array(poses, np.float64, copy=True)
        for k in self.index:
            self.mean[k] = ema_update(self.mean.get(k), out[k, :3], self.alpha)
            out[k, :3] = self.mean[k]
        for k in self.rest:
            self.mean[k] = gated_update(self.mean.get(k), out[k, :3], self.alpha, self.gate)
            out[k, :3] = self.mean[k]
        return out


def task_smoother(task: str, objects: tuple[str, ...], alpha: float, rest_gate_mm: float = 0.0) -> StaticSmoother:
    """The smoother of `task`'s estimates of `objects`: with `alpha` < 1 its static objects averaged, and with
    `rest_gate_mm` > 0 as well its moving ones while at rest; `alpha` = 1 passes every reading through."""
    from vla.robot.objects import static_objects

    static = static_objects(task) if alpha < 1 else ()
    moving = tuple(o for o in objects if o not in static) if alpha < 1 and rest_gate_mm > 0 else ()
    return StaticSmoother(objects, static, alpha, rest=moving, gate=rest_gate_mm * 1e-3)
