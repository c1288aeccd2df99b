"""Simulation: tasks (native MuJoCo and robosuite), scripted experts, intervener, evaluation.

Offscreen rendering on CPU machines goes through OSMesa unless the caller chose a backend (EGL on
a GPU machine): it must be set before anything imports mujoco.

Without libOSMesa (Debian `libosmesa6`), importing mujoco under MUJOCO_GL=osmesa dies inside
PyOpenGL (`'NoneType' object has no attribute 'glGetError'`). Then importing mujoco raises
`OSMesaNotFoundError` instead, which names the package and the command; everything that does not
load mujoco (`vla --help`, `vla config`, `vla data`) keeps working.
"""

from __future__ import annotations

import ctypes.util
import importlib.abc
import os
import sys

os.environ.setdefault("MUJOCO_GL", "osmesa")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

OSMESA_MESSAGE = ("MUJOCO_GL=osmesa but libOSMesa is not installed (Debian/Ubuntu package libosmesa6): "
                  "run `sudo apt-get install -y libosmesa6` (or `make install`, which does it when it can)")


class OSMesaNotFoundError(FileNotFoundError):
    """libOSMesa is missing while MuJoCo is to render through OSMesa."""


class _RefuseMujoco(importlib.abc.MetaPathFinder):
    """Raises OSMesaNotFoundError when mujoco is imported (instead of PyOpenGL's traceback)."""

    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        if name == "mujoco" and os.environ.get("MUJOCO_GL", "").lower() == "osmesa":
            raise OSMesaNotFoundError(OSMESA_MESSAGE)
        return None


def osmesa_missing() -> bool:
    """True when OSMesa rendering is selected and libOSMesa cannot be found."""
    return os.environ.get("MUJOCO_GL", "").lower() == "osmesa" and ctypes.util.find_library("OSMesa") is None


if "mujoco" not in sys.modules and osmesa_missing():
    sys.meta_path.insert(0, _RefuseMujoco())
