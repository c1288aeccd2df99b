"""Task suite: importing this package registers every task in `vla.registry.TASKS`."""

import importlib.util
import warnings

from sim import render  # noqa: F401  (first: selects the headless GL backend before mujoco loads)
from sim.tasks import native  # noqa: F401

# Without robosuite installed only the native tasks are available. An installed robosuite that fails to
# import is not the same thing: it says so (and under VLA_REQUIRE_ALL=1, as in CI, the tests that need
# it fail instead of skipping: tests/conftest.py).
if importlib.util.find_spec("robosuite") is not None:
    try:
        from sim.tasks import robosuite_tasks  # noqa: F401
    except ImportError as e:
        warnings.warn(f"the robosuite tasks are not available: robosuite is installed but does not import: {e}",
                      stacklevel=1)
# Meta-World's tasks (mw_*) when metaworld is installed (the Makefile installs it with --no-deps).
if importlib.util.find_spec("metaworld") is not None:
    from sim.tasks import metaworld_tasks  # noqa: F401
