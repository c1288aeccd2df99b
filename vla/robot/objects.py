"""Each task's object features in the state (`obs_mode=state`, after the proprioception), made from
what a robot with a pose estimator has: the world-frame poses (position, quaternion xyzw) of the
task's named objects and its own hand position. The simulator builds its state with the same
functions (sim/tasks/native/), the MuJoCo bridge publishes the poses and the policy node rebuilds the
state from them, so a policy sees the same numbers in both."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ObjectFeatures:
    poses: tuple[str, ...]  # the objects whose poses are read, in order
    features: Callable[[np.ndarray, np.ndarray], np.ndarray]  # (poses [n, 7], eef_pos [3]) -> features


def pick_place_features(poses: np.ndarray, eef_pos: np.ndarray) -> np.ndarray:
    """cube position, cube quaternion (xyzw), cube - hand, zone position (13)."""
    cube, zone = poses[0], poses[1]
    return np.concatenate([cube[:3], cube[3:7], cube[:3] - eef_pos, zone[:3]])


PICK_PLACE = ObjectFeatures(("cube", "zone"), pick_place_features)
# tasks whose object features come from poses (the native tasks without are not in here)
OBJECT_FEATURES = {"pick_place": PICK_PLACE, "pick_place_square": PICK_PLACE}


def pose_features(task: str) -> tuple[tuple[str, ...], Callable[[np.ndarray, np.ndarray], np.ndarray]]:
    """(object names, features from poses) of `task`; a task without object poses is an error naming
    the ones with."""
    if task not in OBJECT_FEATURES:
        with_poses = ", ".join(sorted(OBJECT_FEATURES))
        raise ValueError(f"task '{task}' has no object poses to read (tasks with: {with_poses})")
    f = OBJECT_FEATURES[task]
    return f.poses, f.features


def object_feature_count(task: str) -> int:
    """How many values `task`'s object features add to the state, counted on zeros."""
    names, features = pose_features(task)
    return len(features(np.zeros((len(names), 7)), np.zeros(3)))
