"""sim.tasks registers the robosuite task names without importing robosuite: a native task's command neither
waits for robosuite's import nor prints its warnings; a robosuite task imports it when made."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("robosuite")

SCRIPT = """
import sys
from vla.registry import TASKS
names = TASKS.names()
assert {"lift", "can", "square"} <= set(names), names
TASKS.make("pick_place", obs_mode="state", cameras=())
print("native", "robosuite" in sys.modules)
env = TASKS.make("lift", obs_mode="state", cameras=())
print("robosuite", "robosuite" in sys.modules, type(env).__name__)
"""


def test_native_tasks_do_not_import_robosuite_and_its_warnings_stay_quiet() -> None:
    env = {**os.environ, "MUJOCO_GL": "osmesa", "PYOPENGL_PLATFORM": "osmesa"}
    env.pop("VLA_VERBOSE", None)
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "native False" in r.stdout and "robosuite True RobosuiteTask" in r.stdout
    assert "robosuite WARNING" not in r.stdout + r.stderr, r.stdout + r.stderr


def test_verbose_lets_robosuites_own_warnings_through() -> None:
    env = {**os.environ, "MUJOCO_GL": "osmesa", "PYOPENGL_PLATFORM": "osmesa", "VLA_VERBOSE": "1"}
    r = subprocess.run([sys.executable, "-c", "import sim.tasks.robosuite_tasks"], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "robosuite WARNING" in r.stdout + r.stderr
