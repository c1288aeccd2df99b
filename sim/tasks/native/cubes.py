"""The three coloured free cubes that `stack3` and `sort` share: their MJCF, their ids, their
placement per seed, and their features and privileged view."""

from __future__ import annotations

from typing import Any

import numpy as np

from sim.tasks.native.base import quat_wxyz_to_xyzw
from sim.tasks.native.pick_place import HALF, yaw_quat

COLOURS = {"red": "0.85 0.15 0.12 1", "green": "0.2 0.7 0.25 1", "blue": "0.15 0.3 0.85 1"}
CUBES = tuple(COLOURS)

BODIES = "".join(f"""
<body name="{c}" pos="{0.1 * i} 0 {HALF}">
  <freejoint name="{c}"/>
  <geom name="{c}" class="object" size="{HALF} {HALF} {HALF}" rgba="{rgba}"/>
</body>""" for i, (c, rgba) in enumerate(COLOURS.items()))


class ThreeCubes:
    """Mixin for a `NativeArmEnv` whose scene holds `BODIES`."""

    model: Any
    data: Any

    def _setup_cubes(self) -> None:
        m = self.model
        self._qadr = {c: m.jnt_qposadr[m.joint(c).id] for c in CUBES}
        self._geom = {c: m.geom(c).id for c in CUBES}
        self._body = {c: m.body(c).id for c in CUBES}

    def _place_cubes(self, rng: np.random.Generator, xy: np.ndarray) -> None:
        """Cube i on the table at xy[i], a yaw within +-45 degrees drawn from `rng`."""
        for i, c in enumerate(CUBES):
            a = self._qadr[c]
            self.data.qpos[a:a + 3] = [xy[i, 0], xy[i, 1], HALF]
            self.data.qpos[a + 3:a + 7] = yaw_quat(rng.uniform(-np.pi / 4, np.pi / 4))

    def cube_pos(self, name: str) -> np.ndarray:
        return self.data.xpos[self._body[name]].copy()

    def _cube_features(self, eef: np.ndarray) -> list[np.ndarray]:
        """Per cube: position, quaternion (xyzw), position relative to the end effector (10 numbers)."""
        feats = []
        for c in CUBES:
            p = self.cube_pos(c)
            feats += [p, quat_wxyz_to_xyzw(self.data.xquat[self._body[c]]), p - eef]
        return feats

    def _cube_objects(self) -> dict[str, dict[str, Any]]:
        return {c: {"pos": self.cube_pos(c), "quat": self.data.xquat[self._body[c]].copy(),
                    "geom": self._geom[c], "half": HALF} for c in CUBES}
