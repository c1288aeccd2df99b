"""Native MuJoCo tasks (our own MJCF, no robosuite); importing registers them in vla.registry.TASKS."""

from sim.tasks.native import pick_place, sort, stack3

__all__ = ["pick_place", "sort", "stack3"]
