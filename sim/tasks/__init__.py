"""Task suite: importing this package registers every task in `vla.registry.TASKS`."""

import importlib.util

from sim import render  # noqa: F401  (first: selects the headless GL backend before mujoco loads)
from sim.tasks import native  # noqa: F401

# Without robosuite installed only the native tasks are available. With it, its task names are registered
# here and robosuite itself is imported when one of them is made (sim/tasks/robosuite_specs.py): a native
# task's command neither waits for robosuite's import nor prints its warnings. An installed robosuite that
# fails to import says so when its task is asked for (and under VLA_REQUIRE_ALL=1, as in CI, the tests
# that need it fail instead of skipping: tests/conftest.py).
if importlib.util.find_spec("robosuite") is not None:
    from sim.tasks.robosuite_lazy import lazy_factory as _lazy_factory
    from sim.tasks.robosuite_specs import SPECS as _ROBOSUITE_SPECS
    from vla.registry import TASKS as _TASKS

    for _name in _ROBOSUITE_SPECS:
        _TASKS.register(_name)(_lazy_factory(_name))
# Meta-World's tasks (mw_*) when metaworld is installed (the Makefile installs it with --no-deps).
if importlib.util.find_spec("metaworld") is not None:
    from sim.tasks import metaworld_tasks  # noqa: F401
