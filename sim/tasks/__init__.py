"""Task suite: importing this package registers every task in `vla.registry.TASKS`."""

import contextlib
import importlib.util

from sim import render  # noqa: F401  (first: selects the headless GL backend before mujoco loads)
from sim.tasks import native  # noqa: F401

# Without robosuite installed only the native tasks are available.
with contextlib.suppress(ImportError):
    from sim.tasks import robosuite_tasks  # noqa: F401
# Meta-World's tasks (mw_*) when metaworld is installed (the Makefile installs it with --no-deps).
if importlib.util.find_spec("metaworld") is not None:
    from sim.tasks import metaworld_tasks  # noqa: F401
