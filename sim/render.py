"""Fast offscreen rendering of several cameras of one MuJoCo model (native and robosuite tasks).

On CPU (OSMesa) shadows and multisampling cost ~100x: `make_fast` turns them off on a compiled
model, and `MultiCameraRenderer` renders all cameras from one GL context at exactly the requested
size, side by side into one buffer read back once per step.

Software GL (llvmpipe) then spends most of a small frame transforming vertices, so the renderer
also skips work that cannot change a pixel (the images stay identical, see tests/sim/test_render.py):

- per camera and frame, geoms whose bounding sphere lies outside the camera's view frustum are
  left out of the scene (MuJoCo draws every geom of the model in every camera otherwise; the wrist
  camera, for one, never sees the pedestal or most of the arm);
- the skybox is not drawn when static opaque geoms cover every pixel (it is drawn behind
  everything): for cameras fixed in the world, tested once by rendering the static geoms; for moving
  cameras (the wrist's), per frame, when the whole view falls on one face of a static box (the
  table top).

Where images need not be identical, `mesh_cell` draws a coarser copy of every mesh (vertex
clustering on a grid of that many metres, `cluster_faces`): Meta-World's Sawyer has 68k triangles,
and at 84x84 drawing them is most of a frame; at 1 cm the arm keeps 14k, a frame costs 0.4x and the
image moves by 0.4 grey levels on average. Physics, contacts and the culler keep the full meshes.

Import this module before anything imports `mujoco`: MuJoCo picks its GL backend at import time,
and we default it to OSMesa (headless CPU) unless MUJOCO_GL is already set (e.g. `egl` on GPU).
"""

from __future__ import annotations

import contextlib
import copy
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


def cluster_faces(verts: np.ndarray, faces: np.ndarray, cell: float) -> tuple[np.ndarray, np.ndarray]:
    """Vertex clustering (Rossignac & Borrel 1993): every vertex is replaced by the first vertex of
    its grid cell of side `cell`; returns (the faces re-pointed, int32 [n, 3]) and which of them
    still span a triangle (bool [n]). The representatives are vertices of the mesh, so the coarse
    mesh stays inside the original's bounding sphere (the frustum culler's test still holds)."""
    if cell <= 0:
        raise ValueError(f"mesh cell must be > 0 metres, got {cell}")
    verts, faces = np.asarray(verts, np.float64), np.asarray(faces, np.int64)
    if verts.ndim != 2 or verts.shape[1] != 3 or faces.ndim != 2 or faces.shape[1] != 3:
        raise ValueError(f"need verts [n, 3] and faces [m, 3], got {verts.shape} and {faces.shape}")
    _, first, inverse = np.unique(np.floor(verts / cell).astype(np.int64), axis=0, return_index=True,
                                  return_inverse=True)
    f = first[inverse.ravel()][faces]
    keep = (f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2])
    return f.astype(np.int32), keep


def coarse_meshes(model: mujoco.MjModel, cell: float) -> mujoco.MjModel:
    """A copy of `model` whose meshes are `cluster_faces`-decimated, for uploading to a render
    context only (face normals and texture coordinates follow their faces)."""
    m = copy.deepcopy(model)
    for i in range(m.nmesh):
        va, vn, fa, fn = m.mesh_vertadr[i], m.mesh_vertnum[i], m.mesh_faceadr[i], m.mesh_facenum[i]
        faces, keep = cluster_faces(m.mesh_vert[va:va + vn], m.mesh_face[fa:fa + fn], cell)
        k = int(keep.sum())
        m.mesh_face[fa:fa + k] = faces[keep]
        m.mesh_facenormal[fa:fa + k] = m.mesh_facenormal[fa:fa + fn][keep]
        if m.mesh_texcoordadr[i] >= 0:
            m.mesh_facetexcoord[fa:fa + k] = m.mesh_facetexcoord[fa:fa + fn][keep]
        m.mesh_facenum[i] = k
    return m


def camera_names(model: mujoco.MjModel) -> list[str]:
    return [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, i) for i in range(model.ncam)]


class MultiCameraRenderer:
    """Renders named cameras to uint8 HxWx3 images (upright, row 0 = top) with one GL context.

    `option` sets geom-group visibility (e.g. robosuite's: visual group 1 shown, collision group 0
    hidden); `scene_flags` maps mjtRndFlag values to on/off; `cull=False` draws every geom in every
    camera (for comparisons); `mesh_cell` > 0 draws meshes clustered on a grid of that many metres
    (`coarse_meshes`; 0 = the model's own meshes, identical images).
    """

    def __init__(self, model: mujoco.MjModel, cameras: tuple[str, ...] | list[str], height: int,
                 width: int | None = None, *, max_geom: int = 1000, option: mujoco.MjvOption | None = None,
                 scene_flags: dict[int, bool] | None = None, cull: bool = True, mesh_cell: float = 0.0) -> None:
        width = height if width is None else width
        if height <= 0 or width <= 0:
            raise ValueError(f"image size must be positive, got height={height}, width={width}")
        if mesh_cell < 0:
            raise ValueError(f"mesh_cell must be >= 0 metres (0: full meshes), got {mesh_cell}")
        self.mesh_faces = (int(model.nmeshface), int(model.nmeshface))  # (model's, drawn)
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
        for flag, on in (scene_flags or {}).items():
            self._scene.flags[flag] = int(on)
        self._opt = option if option is not None else mujoco.MjvOption()
        self._pert = mujoco.MjvPerturb()
        self._mjr = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150)
        if mesh_cell > 0 and model.nmesh:
            coarse = coarse_meshes(model, mesh_cell)
            for i in range(model.nmesh):
                mujoco.mjr_uploadMesh(coarse, self._mjr, i)
            self.mesh_faces = (int(model.nmeshface), int(coarse.mesh_facenum.sum()))
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._mjr)
        self._rects = [mujoco.MjrRect(i * self.width, 0, self.width, self.height) for i in range(n)]
        self._all = mujoco.MjrRect(0, 0, n * self.width, self.height)
        self._buf = np.empty((self.height, n * self.width, 3), dtype=np.uint8)
        self._culler = _FrustumCuller(model, self._opt, self.width / self.height) if cull else None
        self._skybox = [bool(self._scene.flags[mujoco.mjtRndFlag.mjRND_SKYBOX])] * n
        self._skybox_checked = not cull

    def render(self, data: mujoco.MjData) -> dict[str, np.ndarray]:
        """One image per camera, identical to mujoco.Renderer's for the same camera and size."""
        if not self.cameras:
            return {}
        assert self._ctx is not None and self._mjr is not None
        self._ctx.make_current()
        if not self._skybox_checked:
            self._skybox_checked = True
            self._skybox = [on and not self._static_cover(data, cam)
                            for on, cam in zip(self._skybox, self._cams, strict=True)]
        skybox = mujoco.mjtRndFlag.mjRND_SKYBOX
        for rect, cam, sky in zip(self._rects, self._cams, self._skybox, strict=True):
            if sky and self._culler is not None and self._culler.sees_one_box_face(data, cam.fixedcamid):
                sky = False  # a moving camera (the wrist's) looking at the table top, say
            # A full scene update per camera (~10 us): the headlight follows the camera, so updating
            # only the camera would light the second view from the first one's pose.
            self._update_scene(data, cam)
            self._scene.flags[skybox] = int(sky)
            mujoco.mjr_render(rect, self._scene, self._mjr)
        mujoco.mjr_readPixels(self._buf, None, self._all, self._mjr)
        # OpenGL rows start at the bottom; copies, so the next render does not overwrite them.
        flipped = self._buf[::-1]
        w = self.width
        return {name: flipped[:, i * w:(i + 1) * w].copy() for i, name in enumerate(self.cameras)}

    def _update_scene(self, data: mujoco.MjData, cam: mujoco.MjvCamera, hide: np.ndarray | None = None) -> None:
        """mjv_updateScene without the geoms this camera cannot see (and without `hide`)."""
        m = self._model
        culled = self._culler.outside(data, cam.fixedcamid) if self._culler is not None else None
        if hide is not None:
            culled = hide if culled is None else culled | hide
        if culled is None or not culled.any():
            mujoco.mjv_updateScene(m, data, self._opt, self._pert, cam, mujoco.mjtCatBit.mjCAT_ALL, self._scene)
            return
        assert self._culler is not None
        # Move the culled geoms to a hidden geom group for this one scene update (geom_group only
        # selects what is drawn; physics never reads it).
        saved = m.geom_group.copy()
        try:
            m.geom_group[culled] = self._culler.hidden_group
            mujoco.mjv_updateScene(m, data, self._opt, self._pert, cam, mujoco.mjtCatBit.mjCAT_ALL, self._scene)
        finally:
            m.geom_group[:] = saved

    def _static_cover(self, data: mujoco.MjData, cam: mujoco.MjvCamera) -> bool:
        """Whether, seen from a camera fixed in the world, opaque static geoms cover every pixel."""
        m, culler = self._model, self._culler
        if (culler is None or culler.hidden_group < 0 or m.cam_bodyid[cam.fixedcamid] != 0
                or m.cam_mode[cam.fixedcamid] != 0):
            return False
        static = culler.static & culler.opaque
        flags = self._scene.flags
        saved = [flags[f] for f in (mujoco.mjtRndFlag.mjRND_SKYBOX, mujoco.mjtRndFlag.mjRND_SEGMENT)]
        flags[mujoco.mjtRndFlag.mjRND_SKYBOX], flags[mujoco.mjtRndFlag.mjRND_SEGMENT] = 0, 1
        try:
            self._update_scene(data, cam, hide=~static)
            rect = mujoco.MjrRect(0, 0, self.width, self.height)
            mujoco.mjr_render(rect, self._scene, self._mjr)
            seg = np.empty((self.height, self.width, 3), dtype=np.uint8)
            mujoco.mjr_readPixels(seg, None, rect, self._mjr)
        finally:
            flags[mujoco.mjtRndFlag.mjRND_SKYBOX], flags[mujoco.mjtRndFlag.mjRND_SEGMENT] = saved
        # Segmentation colours every drawn object; the background (no object) stays black.
        return bool(seg.any(axis=-1).all())

    def close(self) -> None:
        # Our GL context must be current while the MjrContext frees its textures and buffers: with
        # another renderer's context current, the same GL names there would be freed instead,
        # and that renderer would read back garbage from then on.
        if self._mjr is not None:
            if self._ctx is not None:
                self._ctx.make_current()
            self._mjr.free()
            self._mjr = None
        if self._ctx is not None:
            self._ctx.free()
            self._ctx = None

    def __del__(self) -> None:
        # At interpreter shutdown the GL library may already be gone.
        with contextlib.suppress(Exception):
            self.close()


class _FrustumCuller:
    """Which geoms lie outside a camera's view frustum (bounding-sphere test, conservative)."""

    def __init__(self, model: mujoco.MjModel, option: mujoco.MjvOption, aspect: float) -> None:
        self.model = model
        groups = np.clip(model.geom_group, 0, mujoco.mjNGROUP - 1)
        visible = np.asarray(option.geomgroup, dtype=bool)[groups]
        hidden = [g for g in range(mujoco.mjNGROUP) if not option.geomgroup[g]]
        self.hidden_group = hidden[-1] if hidden else -1
        # Planes (rbound 0) are infinite for this test; they are always drawn.
        self.candidates = np.flatnonzero(visible & (model.geom_rbound > 0)) if hidden else np.zeros(0, int)
        self.radius = model.geom_rbound[self.candidates]
        body = model.geom_bodyid
        # Welded to the world and not a mocap body (those move without joints).
        self.static = (model.body_weldid[body] == 0) & (model.body_mocapid[body] < 0)
        mat = model.geom_matid
        mat_alpha = np.append(model.mat_rgba[:, 3], 1.0)[np.where(mat >= 0, mat, model.nmat)]
        self.opaque = (mat_alpha >= 1.0) & (model.geom_rgba[:, 3] >= 1.0)
        self.aspect = aspect
        shown = np.asarray(option.geomgroup, dtype=bool)[groups]
        self.boxes = np.flatnonzero(self.static & self.opaque & shown & (model.geom_type == mujoco.mjtGeom.mjGEOM_BOX))
        self.znear = model.vis.map.znear * model.stat.extent
        self.zfar = model.vis.map.zfar * model.stat.extent

    def _tangents(self, cam: int) -> tuple[float, float] | None:
        m = self.model
        if m.cam_orthographic[cam] or m.cam_sensorsize[cam].any():
            return None
        tan_y = float(np.tan(np.deg2rad(m.cam_fovy[cam]) / 2))
        return tan_y * self.aspect, tan_y

    def sees_one_box_face(self, data: mujoco.MjData, cam: int) -> bool:
        """Whether the whole view falls on one face of one static opaque box, so that no background
        (skybox) pixel can show. The rays through the four image corners hitting one face, in front
        of the near plane, is enough: every other view ray is a positive combination of them and
        the face is convex."""
        tangents = self._tangents(cam)
        if tangents is None or len(self.boxes) == 0:
            return False
        tan_x, tan_y = tangents
        rot = data.cam_xmat[cam].reshape(3, 3)
        # Corner directions with camera-frame z = -1: a ray's parameter is then its depth.
        corners = np.array([[sx * tan_x, sy * tan_y, -1.0] for sx in (-1, 1) for sy in (-1, 1)]) @ rot.T
        b = self.boxes
        box_rot = data.geom_xmat[b].reshape(-1, 3, 3)
        size = self.model.geom_size[b]                                           # (B, 3)
        origin = np.einsum("bj,bjk->bk", data.cam_xpos[cam] - data.geom_xpos[b], box_rot)  # box frames
        dirs = np.einsum("ij,bjk->bik", corners, box_rot)                        # (B, 4 corners, 3)
        sign = np.array([-1.0, 1.0])
        # Face (axis k, side s) of box b: plane x_k = s * size_k, hit at depth t[b, k, s, corner].
        den = dirs.transpose(0, 2, 1)[:, :, None, :]                             # (B, 3, 1, 4)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (sign * size[:, :, None] - origin[:, :, None])[..., None] / den  # (B, 3, 2, 4)
        facing = (sign * origin[:, :, None] > size[:, :, None]) & np.all(den * sign[:, None] < 0, axis=-1)
        in_depth = np.all((t > self.znear * 1.01) & (t < self.zfar * 0.99), axis=-1)
        hits = origin[:, None, None, None, :] + t[..., None] * dirs[:, None, None, :, :]
        # A 0.1 mm margin keeps pixels on a face's very edge out of the argument.
        inside = (np.abs(hits) <= size[:, None, None, None, :] - 1e-4) | np.eye(3, dtype=bool)[None, :, None, None, :]
        return bool(np.any(facing & in_depth & np.all(inside, axis=(-2, -1))))

    def outside(self, data: mujoco.MjData, cam: int) -> np.ndarray | None:
        """Boolean mask over all geoms (True = cannot appear in camera `cam`), or None to draw all."""
        m = self.model
        tangents = self._tangents(cam)
        if len(self.candidates) == 0 or tangents is None:
            return None
        tan_x, tan_y = tangents
        # Geom centres in the camera frame: x right, y up, looking along -z.
        rel = (data.geom_xpos[self.candidates] - data.cam_xpos[cam]) @ data.cam_xmat[cam].reshape(3, 3)
        depth, r = -rel[:, 2], self.radius
        out = ((depth < -r)
               | (np.abs(rel[:, 0]) > tan_x * depth + r * np.sqrt(1 + tan_x**2))
               | (np.abs(rel[:, 1]) > tan_y * depth + r * np.sqrt(1 + tan_y**2)))
        mask = np.zeros(m.ngeom, dtype=bool)
        mask[self.candidates[out]] = True
        return mask
