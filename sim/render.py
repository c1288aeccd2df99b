"""Fast offscreen rendering of several cameras of one MuJoCo model (native and robosuite tasks).

On CPU (OSMesa) shadows and multisampling cost ~100x: `make_fast` turns them off on a compiled
model, and `MultiCameraRenderer` renders all cameras from one GL context at exactly the requested
size, side by side into one buffer read back once per step.

Import this module before anything imports `mujoco`: MuJoCo picks its GL backend at import time,
and we default it to OSMesa (headless CPU) unless MUJOCO_GL is already set (e.g. `egl` on GPU).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

os.environ.setdefault("MUJOCO_GL", "osmesa")

import mujoco
import numpy as np


def _gl_context_class() -> type:
    """The GL context class for MUJOCO_GL, even if `mujoco` was imported before MUJOCO_GL was set
    (then `mujoco.GLContext` is GLFW, which fails without a display)."""
    backend = os.environ.get("MUJOCO_GL", "").lower()
    if backend == "osmesa":
        from mujoco.osmesa import GLContext
    elif backend == "egl":
        from mujoco.egl import GLContext
    else:
        GLContext = mujoco.GLContext
    return GLContext


def make_fast(model: mujoco.MjModel, width: int | None = None, height: int | None = None) -> None:
    """Turn off shadows, multisampling and shadow casting; size the offscreen buffer to (w, h).

    Visual change: no cast shadows and aliased (jagged) edges; lighting and colours are unchanged.
    """
    model.vis.quality.shadowsize = 0
    model.vis.quality.offsamples = 0
    if model.nlight:
        model.light_castshadow[:] = 0
    if width is not None:
        model.vis.global_.offwidth = int(width)
    if height is not None:
        model.vis.global_.offheight = int(height)


def camera_names(model: mujoco.MjModel) -> list[str]:
    return [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, i) for i in range(model.ncam)]


class MultiCameraRenderer:
    """Renders named cameras to uint8 HxWx3 images (upright, row 0 = top) with one GL context."""

    def __init__(self, model: mujoco.MjModel, cameras: tuple[str, ...] | list[str], height: int,
                 width: int | None = None, *, max_geom: int = 1000) -> None:
        width = height if width is None else width
        if height <= 0 or width <= 0:
            raise ValueError(f"image size must be positive, got height={height}, width={width}")
        valid = camera_names(model)
        for cam in cameras:
            if cam not in valid:
                raise ValueError(f"unknown camera '{cam}' (valid: {', '.join(valid)})")
        self.cameras = tuple(cameras)
        self.height, self.width = int(height), int(width)
        self._model = model
        self._cams: list[mujoco.MjvCamera] = []
        for cam in self.cameras:
            c = mujoco.MjvCamera()
            c.type = mujoco.mjtCamera.mjCAMERA_FIXED
            c.fixedcamid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, cam)
            self._cams.append(c)
        self._ctx: Any = None
        self._mjr: mujoco.MjrContext | None = None
        if not self.cameras:
            return
        # All cameras side by side in one buffer, read back with one mjr_readPixels: the software
        # renderer finishes its queued work on each readback, so one sync per step instead of one
        # per camera. The buffer is sized exactly (a larger one costs clears and memory).
        n = len(self.cameras)
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, n * self.width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, self.height)
        self._ctx = _gl_context_class()(model.vis.global_.offwidth, model.vis.global_.offheight)
        self._ctx.make_current()
        self._scene = mujoco.MjvScene(model, maxgeom=max_geom)
        self._opt = mujoco.MjvOption()
        self._pert = mujoco.MjvPerturb()
        self._mjr = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._mjr)
        self._rects = [mujoco.MjrRect(i * self.width, 0, self.width, self.height) for i in range(n)]
        self._all = mujoco.MjrRect(0, 0, n * self.width, self.height)
        self._buf = np.empty((self.height, n * self.width, 3), dtype=np.uint8)

    def render(self, data: mujoco.MjData) -> dict[str, np.ndarray]:
        """One image per camera, identical to mujoco.Renderer's for the same camera and size."""
        if not self.cameras:
            return {}
        assert self._ctx is not None and self._mjr is not None
        self._ctx.make_current()
        for rect, cam in zip(self._rects, self._cams, strict=True):
            # A full scene update per camera (~2 us): the headlight follows the camera, so updating
            # only the camera would light the second view from the first one's pose.
            mujoco.mjv_updateScene(self._model, data, self._opt, self._pert, cam,
                                   mujoco.mjtCatBit.mjCAT_ALL, self._scene)
            mujoco.mjr_render(rect, self._scene, self._mjr)
        mujoco.mjr_readPixels(self._buf, None, self._all, self._mjr)
        # OpenGL rows start at the bottom; copies, so the next render does not overwrite them.
        flipped = self._buf[::-1]
        w = self.width
        return {name: flipped[:, i * w:(i + 1) * w].copy() for i, name in enumerate(self.cameras)}

    def close(self) -> None:
        if self._mjr is not None:
            self._mjr.free()
            self._mjr = None
        if self._ctx is not None:
            self._ctx.free()
            self._ctx = None

    def __del__(self) -> None:
        # At interpreter shutdown the GL library may already be gone.
        with contextlib.suppress(Exception):
            self.close()
