"""`pick_place`: pick a cube and put it down inside a target zone marked on the table.

Randomised per seed: cube position and yaw, target-zone position (at least 15 cm from the cube).
Sub-tasks: `pick_cube` (until the cube is held), `place_cube`. Success: cube resting inside the
zone and released (no finger pad touching it).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from sim.tasks.native.base import NativeArmEnv, quat_wxyz_to_xyzw
from vla.registry import TASKS
from vla.robot.objects import PICK_PLACE

HALF = 0.02  # cube half-size (m)
ZONE_HALF = 0.06
CUBE_LO, CUBE_HI = np.array([-0.12, -0.22]), np.array([0.15, 0.22])

_BODIES = f"""
<body name="cube" pos="0 0 {HALF}">
  <freejoint name="cube"/>
  <geom name="cube" class="object" size="{HALF} {HALF} {HALF}" rgba="0.85 0.15 0.12 1"/>
</body>
"""
_SITES = f"""
<geom name="zone" type="box" pos="0.1 0.1 0.0005" size="{ZONE_HALF} {ZONE_HALF} 0.0005"
      rgba="0.2 0.7 0.3 1"/>
"""


def sample_positions(rng: np.random.Generator, n: int, min_dist: float,
                     lo: np.ndarray = CUBE_LO, hi: np.ndarray = CUBE_HI) -> np.ndarray:
    """n xy positions in the box [lo, hi], pairwise at least min_dist apart (rejection sampling)."""
    for _ in range(1000):
        pts = rng.uniform(lo, hi, size=(n, 2))
        d = np.linalg.norm(pts[:, None] - pts[None], axis=-1) + np.eye(n) * 1e9
        if d.min() >= min_dist:
            return pts
    raise RuntimeError(f"could not place {n} objects {min_dist} m apart")


def yaw_quat(yaw: float) -> np.ndarray:
    return np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])


class PickPlaceEnv(NativeArmEnv):
    TASK = "pick_place"
    INSTRUCTIONS: ClassVar[tuple[str, ...]] = (
        "pick up the red cube and place it in the green zone",
        "put the red block on the green square",
        "move the cube into the target area",
        "grasp the red cube and set it down on the green patch",
    )
    SUBTASKS: ClassVar[tuple[str, ...]] = ("pick_cube", "place_cube")
    DEFAULT_HORIZON = 200
    MAX_YAW = np.pi / 4  # the cube's starting yaw is drawn within +-MAX_YAW (a cube repeats every 90 degrees)

    def _task_xml(self) -> tuple[str, str]:
        return _BODIES, _SITES

    def _setup_task(self) -> None:
        m = self.model
        self._cube_qadr = m.jnt_qposadr[m.joint("cube").id]
        self._cube_geom = m.geom("cube").id
        self._cube_body = m.body("cube").id
        self._zone_geom = m.geom("zone").id

    def _randomize(self, rng: np.random.Generator) -> None:
        cube_xy, zone_xy = sample_positions(rng, 2, 0.15)
        q = self.data.qpos
        q[self._cube_qadr:self._cube_qadr + 3] = [cube_xy[0], cube_xy[1], HALF]
        q[self._cube_qadr + 3:self._cube_qadr + 7] = yaw_quat(rng.uniform(-self.MAX_YAW, self.MAX_YAW))
        self.model.geom_pos[self._zone_geom, :2] = zone_xy

    def cube_pos(self) -> np.ndarray:
        return self.data.xpos[self._cube_body].copy()

    def zone_pos(self) -> np.ndarray:
        return np.array([*self.model.geom_pos[self._zone_geom, :2], 0.0])

    def _evaluate(self) -> tuple[str, tuple[str, ...], bool]:
        held = self.is_grasped(self._cube_geom)
        touched = any(self.touching(self._cube_geom))
        cube, zone = self.cube_pos(), self.zone_pos()
        inside = bool(np.all(np.abs(cube[:2] - zone[:2]) < ZONE_HALF - 0.01)) and cube[2] < HALF + 0.01
        if inside and not touched:
            return "place_cube", ("pick_cube", "place_cube"), True
        if held:
            return "place_cube", ("pick_cube",), False
        return "pick_cube", (), False

    def _n_object_features(self) -> int:
        return 13

    OBJECT_POSES: ClassVar[tuple[str, ...]] = PICK_PLACE.poses

    def object_poses(self) -> np.ndarray:
        cube = np.concatenate([self.cube_pos(), quat_wxyz_to_xyzw(self.data.xquat[self._cube_body])])
        zone = np.concatenate([self.zone_pos(), [0.0, 0.0, 0.0, 1.0]])  # a flat patch: its yaw is not a feature
        return np.stack([cube, zone])

    @classmethod
    def features_from_poses(cls, poses: np.ndarray, eef_pos: np.ndarray) -> np.ndarray:
        """The robot's own rule (vla.robot.objects): cube position, quaternion, cube - hand, zone (13)."""
        return PICK_PLACE.features(poses, eef_pos)

    def privileged(self) -> dict[str, Any]:
        cube = self.cube_pos()
        return {
            "objects": {"cube": {"pos": cube, "quat": self.data.xquat[self._cube_body].copy(),
                                 "geom": self._cube_geom, "half": HALF}},
            "active_object": "cube",
            "goal_pos": self.zone_pos() + np.array([0.0, 0.0, HALF]),
            "zone_pos": self.zone_pos(),
            "held": self.is_grasped(self._cube_geom),
        }


# the constructor is the factory: its defaults (84-pixel images, image mode, DEFAULT_HORIZON) are the task's
@TASKS.register("pick_place_square")
class PickPlaceSquareEnv(PickPlaceEnv):
    """`pick_place_square`: pick_place with the cube starting square to the hand (yaw within +-5 degrees),
    as from a tray or a feeder. The same seeds give the same cube and zone positions as pick_place.
    Why it exists: a camera policy trained on pick_place's demos does not learn to read the cube's yaw
    from 84-pixel images, and its grasps of turned cubes slip (benchmarks/results/main_job_notes.md);
    here the grasp needs no turn, and what is left to learn is where to go."""

    TASK = "pick_place_square"
    MAX_YAW = np.deg2rad(5.0)


@TASKS.register("pick_place")
def make_pick_place(cameras: tuple[str, ...] | None = None, image_size: int = 84, horizon: int = 200,
                    obs_mode: str = "image", **kwargs: Any) -> PickPlaceEnv:
    return PickPlaceEnv(cameras=cameras, image_size=image_size, horizon=horizon, obs_mode=obs_mode, **kwargs)
