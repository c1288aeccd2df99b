"""Fast offscreen rendering of a robosuite sim on CPU (OSMesa / llvmpipe).

robosuite renders with 4096-px shadow maps, 4x multisampling, a reflective floor and a 640x480
offscreen buffer; with software GL that costs ~0.1 s of CPU for two 84x84 cameras. Here one
`sim.render.MultiCameraRenderer` per env renders the same cameras at the same resolution with:

- no shadow map (`vis.quality.shadowsize = 0`, lights `castshadow = 0`),
- no multisampling (`vis.quality.offsamples = 0`),
- no planar reflections (`mjRND_REFLECTION` off; the floor is the only strongly reflective material),
- an offscreen buffer exactly the image size (`vis.global_.offwidth/offheight`),
- the GL context and uploaded meshes/textures created once and reused across steps and resets,
- robosuite's geom-group visibility (visual meshes shown, collision meshes hidden),
- built-in cylinders drawn with 2 rings along their axis instead of 16 (`coarsen_tessellation`),
- both cameras side by side in one buffer, read back once; geoms outside a camera's view frustum
  left out of its scene; no skybox where static geoms cover the whole view (no pixel changes),
- optionally (`decimate_visual_meshes`), visual-only meshes simplified by vertex clustering: the
  Panda's and its pedestal's visual meshes have 167k triangles (24k with robosuite_tasks' settings:
  8 mm, 3% of a mesh's size for large ones, 4 mm for the gripper), and vertex processing in
  llvmpipe otherwise dominates the frame time (image size hardly matters: 42, 84 and 168 px cost
  about the same).
  Visual-only geoms (contype = conaffinity = 0, outside the inertia group range) take no part in
  contacts or inertia, so the physics is unchanged (tests/sim/tasks check trajectories are equal).

Visually: no soft shadows under the arm and objects, no floor reflection, slightly harder
(aliased) edges; with decimation, the arm's and pedestal's curved surfaces are slightly faceted
and the gripper's fine detail a little blockier (vertices merged within the voxel size; textured
meshes are left as they are). Camera poses, field of view, materials, textures and lighting are
unchanged; culling and skybox skipping change no pixel.
"""

from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "osmesa")

import xml.etree.ElementTree as ET
from collections.abc import Sequence

import mujoco
import numpy as np

from sim import render

# (mesh file, scale, voxel) -> inline vertex and face strings: the expensive compile and clustering
# happen once per process, not once per env.
_DECIMATED: dict[tuple[str, str, str, float, float, tuple[tuple[str, float], ...]], tuple[str, str]] = {}


def make_fast(model: mujoco.MjModel, size: int) -> None:
    """Patch a model's visual settings in place for cheap rendering (physics is untouched)."""
    render.make_fast(model, size, size)


class FastRenderer:
    """Renders square RGB images of named cameras from a robosuite sim's MjModel/MjData.

    One `sim.render.MultiCameraRenderer` per camera list: one GL context, both views side by side
    in one buffer read back once, frustum culling per camera (see sim/render.py).
    """

    def __init__(self, model: mujoco.MjModel, size: int, *, cull: bool = True) -> None:
        self.model = model
        self.size = size
        self.cull = cull
        make_fast(model, size)
        coarsen_tessellation(model)
        # Same visibility as robosuite's render context: visual meshes (group 1) shown, collision
        # meshes (group 0) hidden; otherwise both would be drawn on top of each other.
        self._option = mujoco.MjvOption()
        self._option.geomgroup[0] = 0
        self._option.geomgroup[1] = 1
        self._renderers: dict[tuple[str, ...], render.MultiCameraRenderer] = {}

    def render(self, data: mujoco.MjData, cameras: Sequence[str]) -> dict[str, np.ndarray]:
        """Upright uint8 HxWx3 images, one per camera (a fresh array each)."""
        key = tuple(cameras)
        r = self._renderers.get(key)
        if r is None:
            r = render.MultiCameraRenderer(
                self.model, key, self.size, option=self._option, cull=self.cull,
                scene_flags={mujoco.mjtRndFlag.mjRND_REFLECTION: False})
            self._renderers[key] = r
        return r.render(data)

    def close(self) -> None:
        for r in self._renderers.values():
            r.close()
        self._renderers.clear()


def coarsen_tessellation(model: mujoco.MjModel, stacks: int = 2) -> None:
    """Draw built-in primitives with `stacks` rings instead of 16 when only cylinders and boxes are
    visible (robosuite's table and bin legs, round pegs): MuJoCo draws primitives vertex by vertex,
    and the table legs alone cost ~1 ms per frame pair in llvmpipe. For a cylinder the rings only
    sample the lighting along its flat side, so the pixels barely change (none in lift and square, 2
    of 7056 in can's agentview); spheres, capsules and ellipsoids would lose their shape, so a model
    showing any keeps the default.
    """
    round_types = (mujoco.mjtGeom.mjGEOM_SPHERE, mujoco.mjtGeom.mjGEOM_CAPSULE, mujoco.mjtGeom.mjGEOM_ELLIPSOID)
    shown = model.geom_group == 1  # robosuite's visual group (collision geoms are hidden)
    if not np.isin(model.geom_type[shown], [int(t) for t in round_types]).any():
        model.vis.quality.numstacks = min(int(model.vis.quality.numstacks), stacks)


def _cluster(vert: np.ndarray, face: np.ndarray, voxel: float) -> tuple[np.ndarray, np.ndarray]:
    """Vertex clustering: merge the vertices in each voxel into their mean; drop collapsed faces."""
    _, inverse = np.unique(np.floor(vert / voxel).astype(np.int64), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    n = int(inverse.max()) + 1
    merged = np.zeros((n, 3))
    np.add.at(merged, inverse, vert)
    merged /= np.bincount(inverse, minlength=n)[:, None]
    f = inverse[face]
    f = f[(f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2])]
    _, first = np.unique(np.sort(f, axis=1), axis=0, return_index=True)
    f = f[np.sort(first)]
    used = np.unique(f)
    remap = np.full(n, -1)
    remap[used] = np.arange(len(used))
    return merged[used], remap[f]


def _decimatable(model: mujoco.MjModel) -> list[int]:
    """Meshes used only by visual geoms without textures (texture coordinates are not clustered)."""
    users: dict[int, list[int]] = {}
    for g in range(model.ngeom):
        if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH:
            users.setdefault(int(model.geom_dataid[g]), []).append(g)
    out = []
    for mesh, geoms in users.items():
        if model.mesh_facenum[mesh] < 200:
            continue
        visual = all(model.geom_contype[g] == 0 and model.geom_conaffinity[g] == 0 for g in geoms)
        textured = any(model.geom_matid[g] >= 0 and (model.mat_texid[model.geom_matid[g]] >= 0).any()
                       for g in geoms)
        if visual and not textured:
            out.append(mesh)
    return out


def decimate_visual_meshes(xml: str, voxel: float = 0.008, relative: float = 0.0,
                           prefix_voxels: tuple[tuple[str, float], ...] = (("gripper", 0.0),)) -> str:
    """Return the MJCF with each visual-only mesh replaced by an inline, vertex-clustered copy.

    Each mesh is clustered with voxels of max(`voxel`, `relative` x its bounding-box diagonal): a
    relative size keeps the same number of cells across small and large parts (the 1.3 m pedestal,
    seen only from afar, needs no 8 mm detail). Meshes whose name starts with a prefix in
    `prefix_voxels` use that prefix's voxel instead (0 = keep the mesh as it is): the gripper is
    seen up close by the wrist camera (~1.3 mm per pixel at 84x84).
    """
    if voxel <= 0 or relative < 0 or any(v < 0 for _, v in prefix_voxels):
        raise ValueError(f"voxels must be > 0 and relative >= 0, got voxel={voxel}, relative={relative}, "
                         f"prefix_voxels={prefix_voxels}")
    root = ET.fromstring(xml)
    elements = {e.get("name"): e for e in root.iter("mesh") if e.get("file")}
    model: mujoco.MjModel | None = None

    def key(e: ET.Element) -> tuple[str, str, str, float, float, tuple[str, ...]]:
        return (e.get("name", ""), e.get("file", ""), e.get("scale", ""), voxel, relative, prefix_voxels)

    if not all(key(e) in _DECIMATED for e in elements.values()):
        model = mujoco.MjModel.from_xml_string(xml)
        for mesh in _decimatable(model):
            name = model.mesh(mesh).name
            e = elements.get(name)
            if e is None or key(e) in _DECIMATED:
                continue
            size = next((v for prefix, v in prefix_voxels if name.startswith(prefix)), None)
            if size == 0:
                continue
            adr, n = model.mesh_vertadr[mesh], model.mesh_vertnum[mesh]
            vert = model.mesh_vert[adr:adr + n].astype(np.float64)
            fadr, nf = model.mesh_faceadr[mesh], model.mesh_facenum[mesh]
            face = model.mesh_face[fadr:fadr + nf]
            # The compiler moved the vertices into the mesh's inertial frame; move them back to the
            # file's frame so that the geom's pose in the XML still applies.
            rot = np.zeros(9)
            mujoco.mju_quat2Mat(rot, model.mesh_quat[mesh])
            vert = vert @ rot.reshape(3, 3).T + model.mesh_pos[mesh]
            if size is None:
                size = max(voxel, relative * float(np.linalg.norm(vert.max(axis=0) - vert.min(axis=0))))
            v, f = _cluster(vert, face, size)
            if len(v) < 4 or len(f) < 4 or len(f) > 0.8 * nf:
                _DECIMATED[key(e)] = ("", "")  # too small to gain anything: keep the original
                continue
            _DECIMATED[key(e)] = (" ".join(f"{x:.5f}" for x in v.ravel()), " ".join(map(str, f.ravel())))
        for e in elements.values():
            _DECIMATED.setdefault(key(e), ("", ""))  # not decimatable (collision, textured, ...)
    for e in elements.values():
        vertex, face = _DECIMATED[key(e)]
        if vertex:
            for attr in ("file", "scale"):
                e.attrib.pop(attr, None)
            # Shell inertia: always well defined for a clustered (possibly non-watertight) surface;
            # it only sets the visual geom's frame, which does not affect the physics.
            e.set("vertex", vertex)
            e.set("face", face)
            e.set("inertia", "shell")
    return ET.tostring(root, encoding="unicode")
