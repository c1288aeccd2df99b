"""The robosuite tasks' registry entries: each imports robosuite (sim/tasks/robosuite_tasks.py) only when
its task is first made, so registering the names (sim/tasks/__init__.py) costs nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sim.tasks.robosuite_specs import SPECS


def lazy_factory(task: str) -> Callable[..., Any]:
    """`task`'s registry entry: imports robosuite when the task is first made; an installed robosuite that
    does not import fails here with one line naming the task and the import error."""

    def make(**kwargs: Any) -> Any:
        try:
            from sim.tasks import robosuite_tasks
        except ImportError as e:
            raise RuntimeError(f"task '{task}' needs robosuite, which is installed but does not import: {e}") from None
        return robosuite_tasks._factory(task)(**kwargs)

    make.__name__ = f"make_{task}"
    make.__doc__ = f"robosuite {SPECS[task].env_name}, robomimic's settings (robosuite_tasks.RobosuiteTask)."
    return make
