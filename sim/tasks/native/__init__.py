"""Native MuJoCo tasks (our own MJCF, no robosuite); importing registers them in vla.registry.TASKS."""

from collections.abc import Callable

import numpy as np

from sim.tasks.native import pick_place, sort, stack3
from sim.tasks.native.base import NativeArmEnv

__all__ = ["env_class", "pick_place", "pose_features", "sort", "stack3"]


def env_class(task: str) -> type[NativeArmEnv]:
    """The class behind a native task's name (its OBJECT_POSES and features_from_poses, without an env)."""
    classes: dict[str, type[NativeArmEnv]] = {c.TASK: c for c in (pick_place.PickPlaceEnv,
                                                                  pick_place.PickPlaceSquareEnv,
                                                                  sort.SortEnv, stack3.Stack3Env)}
    if task not in classes:
        raise ValueError(f"'{task}' is not a native MuJoCo task (native: {', '.join(sorted(classes))})")
    return classes[task]


def pose_features(task: str) -> tuple[tuple[str, ...], Callable[[np.ndarray, np.ndarray], np.ndarray]]:
    """(OBJECT_POSES, features_from_poses) of native `task`: what a robot reads from a pose estimator
    and how it makes the obs_mode=state object features from it; a task without poses is an error."""
    cls = env_class(task)
    if not cls.OBJECT_POSES:
        raise ValueError(f"task '{task}' has no object poses to read")
    return cls.OBJECT_POSES, cls.features_from_poses
