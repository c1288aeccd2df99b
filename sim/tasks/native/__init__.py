"""Native MuJoCo tasks (our own MJCF, no robosuite); importing registers them in vla.registry.TASKS."""

from sim.tasks.native import pick_place, sort, stack3
from sim.tasks.native.base import NativeArmEnv

__all__ = ["env_class", "pick_place", "sort", "stack3"]


def env_class(task: str) -> type[NativeArmEnv]:
    """The class behind a native task's name (its OBJECT_POSES and features_from_poses, without an env)."""
    classes: dict[str, type[NativeArmEnv]] = {c.TASK: c for c in (pick_place.PickPlaceEnv,
                                                                  pick_place.PickPlaceSquareEnv,
                                                                  sort.SortEnv, stack3.Stack3Env)}
    if task not in classes:
        raise ValueError(f"'{task}' is not a native MuJoCo task (native: {', '.join(sorted(classes))})")
    return classes[task]
