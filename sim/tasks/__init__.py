"""Task suite: importing this package registers every task in `vla.registry.TASKS`."""

import contextlib

from sim import render  # noqa: F401  (first: selects the headless GL backend before mujoco loads)
from sim.tasks import native  # noqa: F401

# Without robosuite installed only the native tasks are available.
with contextlib.suppress(ImportError):
    from sim.tasks import robosuite_tasks  # noqa: F401
