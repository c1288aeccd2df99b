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
    # features -> poses [n, 7]: the labels a pose estimator learns from a store's states (what the
    # features drop, such as the zone's yaw, comes back as identity)
    poses_from: Callable[[np.ndarray], np.ndarray]
    # objects that do not move within an episode (a marked zone): an estimator's reading of them can be
    # averaged over time (vla.perception.smooth)
    static: tuple[str, ...] = ()


def pick_place_features(poses: np.ndarray, eef_pos: np.ndarray) -> np.ndarray:
    """cube position, cube quaternion (xyzw), cube - hand, zone position (13)."""
    cube, zone = poses[0], poses[1]
    return np.concatenate([cube[:3], cube[3:7], cube[:3] - eef_pos, zone[:3]])


def pick_place_poses(features: np.ndarray) -> np.ndarray:
    """The inverse of pick_place_features: [cube, zone] poses [2, 7] (the zone flat, its yaw identity)."""
    f = np.asarray(features, np.float64)
    zone = np.concatenate([f[10:13], [0.0, 0.0, 0.0, 1.0]])
    return np.stack([f[:7], zone])


PICK_PLACE = ObjectFeatures(("cube", "zone"), pick_place_features, pick_place_poses, static=("zone",))
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


def static_objects(task: str) -> tuple[str, ...]:
    """The objects of `task` that stay where they are within an episode."""
    pose_features(task)  # an unknown task is the same error as there
    return OBJECT_FEATURES[task].static


def poses_from_states(task: str, states: np.ndarray) -> np.ndarray:
    """float [N, K, 7] object poses from `task`'s states [N, D] (obs_mode=state: proprioception, then the
    object features, which end the state)."""
    names, _ = pose_features(task)
    n = object_feature_count(task)
    states = np.asarray(states, np.float64)
    if states.ndim != 2 or states.shape[1] < n:
        raise ValueError(f"task '{task}': states of shape {states.shape} hold no {n} object features "
                         "(a store collected with obs_mode=state has them)")
    inverse = OBJECT_FEATURES[task].poses_from
    return np.stack([inverse(row) for row in states[:, -n:]]) if len(states) else np.zeros((0, len(names), 7))


def object_feature_count(task: str) -> int:
    """How many values `task`'s object features add to the state, counted on zeros."""
    names, features = pose_features(task)
    return len(features(np.zeros((len(names), 7)), np.zeros(3)))
