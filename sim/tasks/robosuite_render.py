"""Fast offscreen rendering of a robosuite sim on CPU (OSMesa / llvmpipe).

robosuite renders with 4096-px shadow maps, 4x multisampling, a reflective floor and a 640x480
offscreen buffer; with software GL that costs ~0.1 s of CPU for two 84x84 cameras. Here one
`mujoco.Renderer` per env renders the same cameras at the same resolution with:

- no shadow map (`vis.quality.shadowsize = 0`, lights `castshadow = 0`),
- no multisampling (`vis.quality.offsamples = 0`),
- no planar reflections (`mjRND_REFLECTION` off; the floor is the only strongly reflective material),
- an offscreen buffer exactly the image size (`vis.global_.offwidth/offheight`),
- the GL context and uploaded meshes/textures created once and reused across steps and resets,
- robosuite's geom-group visibility (visual meshes shown, collision meshes hidden),
- optionally (`decimate_visual_meshes`), visual-only meshes simplified by vertex clustering: the
  Panda's visual meshes have 167k triangles (45k after 8 mm clustering), and vertex processing in
  llvmpipe then dominates the frame time.
  Visual-only geoms (contype = conaffinity = 0, outside the inertia group range) take no part in
  contacts or inertia, so the physics is unchanged (tests/sim/tasks check trajectories are equal).

Visually: no soft shadows under the arm and objects, no floor reflection, slightly harder
(aliased) edges; with decimation, the arm's and pedestal's curved surfaces are slightly faceted
(vertices merged within the voxel size; the gripper, seen up close by the wrist camera, and
textured meshes are left as they are). Camera poses, field of view, materials, textures and
lighting are unchanged.
"""

from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "osmesa")

import xml.etree.ElementTree as ET
from collections.abc import Sequence

import mujoco
import numpy as np

# (mesh file, scale, voxel) -> inline vertex and face strings: the expensive compile and clustering
# happen once per process, not once per env.
_DECIMATED: dict[tuple[str, str, str, float], tuple[str, str]] = {}


def make_fast(model: mujoco.MjModel, size: int) -> None:
    """Patch a model's visual settings in place for cheap rendering (physics is untouched)."""
    model.vis.quality.shadowsize = 0
    model.vis.quality.offsamples = 0
    model.light_castshadow[:] = 0
    model.vis.global_.offwidth = size
    model.vis.global_.offheight = size


class FastRenderer:
    """Renders square RGB images of named cameras from a robosuite sim's MjModel/MjData."""

    def __init__(self, model: mujoco.MjModel, size: int) -> None:
        self.model = model
        self.size = size
        make_fast(model, size)
        self._renderer = mujoco.Renderer(model, size, size)
        self._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        # Same visibility as robosuite's render context: visual meshes (group 1) shown, collision
        # meshes (group 0) hidden; otherwise both would be drawn on top of each other.
        self._option = mujoco.MjvOption()
        self._option.geomgroup[0] = 0
        self._option.geomgroup[1] = 1
        self._cam_ids: dict[str, int] = {}

    def camera_id(self, name: str) -> int:
        if name not in self._cam_ids:
            cam = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_CAMERA, name)
            if cam < 0:
                valid = [self.model.camera(i).name for i in range(self.model.ncam)]
                raise ValueError(f"unknown camera '{name}' (valid: {', '.join(valid)})")
            self._cam_ids[name] = cam
        return self._cam_ids[name]

    def render(self, data: mujoco.MjData, cameras: Sequence[str]) -> dict[str, np.ndarray]:
        """Upright uint8 HxWx3 images, one per camera (a fresh array each)."""
        out = {}
        for name in cameras:
            self._renderer.update_scene(data, camera=self.camera_id(name), scene_option=self._option)
            out[name] = self._renderer.render()
        return out

    def close(self) -> None:
        self._renderer.close()


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


def _decimatable(model: mujoco.MjModel, skip_prefixes: tuple[str, ...]) -> list[int]:
    """Meshes used only by visual geoms without textures (texture coordinates are not clustered)."""
    users: dict[int, list[int]] = {}
    for g in range(model.ngeom):
        if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH:
            users.setdefault(int(model.geom_dataid[g]), []).append(g)
    out = []
    for mesh, geoms in users.items():
        name = model.mesh(mesh).name
        if name.startswith(skip_prefixes) or model.mesh_facenum[mesh] < 200:
            continue
        visual = all(model.geom_contype[g] == 0 and model.geom_conaffinity[g] == 0 for g in geoms)
        textured = any(model.geom_matid[g] >= 0 and (model.mat_texid[model.geom_matid[g]] >= 0).any()
                       for g in geoms)
        if visual and not textured:
            out.append(mesh)
    return out


def decimate_visual_meshes(xml: str, voxel: float = 0.008,
                           skip_prefixes: tuple[str, ...] = ("gripper",)) -> str:
    """Return the MJCF with each visual-only mesh replaced by an inline, vertex-clustered copy."""
    if voxel <= 0:
        raise ValueError(f"voxel must be > 0, got {voxel}")
    root = ET.fromstring(xml)
    elements = {e.get("name"): e for e in root.iter("mesh") if e.get("file")}
    model: mujoco.MjModel | None = None

    def key(e: ET.Element) -> tuple[str, str, str, float]:
        return (e.get("name", ""), e.get("file", ""), e.get("scale", ""), voxel)

    if not all(key(e) in _DECIMATED for e in elements.values()):
        model = mujoco.MjModel.from_xml_string(xml)
        for mesh in _decimatable(model, skip_prefixes):
            e = elements.get(model.mesh(mesh).name)
            if e is None or key(e) in _DECIMATED:
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
            v, f = _cluster(vert, face, voxel)
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
