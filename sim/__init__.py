"""Simulation: tasks (native MuJoCo and robosuite), scripted experts, intervener, evaluation.

Offscreen rendering on CPU machines goes through OSMesa unless the caller chose a backend (EGL on
a GPU machine): it must be set before anything imports mujoco.
"""

import os

os.environ.setdefault("MUJOCO_GL", "osmesa")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
