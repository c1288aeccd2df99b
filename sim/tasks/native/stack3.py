"""`stack3`: a long-horizon task, stack the green cube on the red one, then the blue one on top.

Four sub-tasks in order: pick_green, place_green_on_red, pick_blue, place_blue_on_green. The
current one is derived from the state every step (so knocking the stack over sends the task back
to an earlier sub-task). Success only when the three-cube tower stands and the gripper has let go.
Randomised per seed: the three cube positions (>= 10 cm apart) and yaws.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from sim.tasks.native.base import NativeArmEnv, quat_wxyz_to_xyzw
from sim.tasks.native.pick_place import HALF, sample_positions, yaw_quat
from vla.registry import TASKS

COLOURS = {"red": "0.85 0.15 0.12 1", "green": "0.2 0.7 0.25 1", "blue": "0.15 0.3 0.85 1"}
CUBES = tuple(COLOURS)
SUBTASKS = ("pick_green", "place_green_on_red", "pick_blue", "place_blue_on_green")
# (object moved, object it goes on) per pick/place pair of sub-tasks.
STAGES = (("green", "red"), ("blue", "green"))

_BODIES = "".join(f"""
<body name="{c}" pos="{0.1 * i} 0 {HALF}">
  <freejoint name="{c}"/>
  <geom name="{c}" class="object" size="{HALF} {HALF} {HALF}" rgba="{rgba}"/>
</body>""" for i, (c, rgba) in enumerate(COLOURS.items()))


class Stack3Env(NativeArmEnv):
    TASK = "stack3"
    INSTRUCTIONS: ClassVar[tuple[str, ...]] = (
        "stack the green cube on the red cube, then the blue cube on the green cube",
        "build a tower: red at the bottom, green in the middle, blue on top",
        "put green on red and then blue on green",
        "stack the three blocks with red at the base and blue at the top",
    )
    SUBTASKS: ClassVar[tuple[str, ...]] = SUBTASKS
    DEFAULT_HORIZON = 400

    def _task_xml(self) -> tuple[str, str]:
        return _BODIES, ""

    def _setup_task(self) -> None:
        m = self.model
        self._qadr = {c: m.jnt_qposadr[m.joint(c).id] for c in CUBES}
        self._geom = {c: m.geom(c).id for c in CUBES}
        self._body = {c: m.body(c).id for c in CUBES}

    def _randomize(self, rng: np.random.Generator) -> None:
        xy = sample_positions(rng, len(CUBES), 0.1)
        for i, c in enumerate(CUBES):
            a = self._qadr[c]
            self.data.qpos[a:a + 3] = [xy[i, 0], xy[i, 1], HALF]
            self.data.qpos[a + 3:a + 7] = yaw_quat(rng.uniform(-np.pi / 4, np.pi / 4))

    def cube_pos(self, name: str) -> np.ndarray:
        return self.data.xpos[self._body[name]].copy()

    def _on(self, top: str, bottom: str) -> bool:
        t, b = self.cube_pos(top), self.cube_pos(bottom)
        return bool(np.linalg.norm(t[:2] - b[:2]) < HALF and abs(t[2] - b[2] - 2 * HALF) < 0.008)

    def _stage(self) -> int:
        """Index of the current sub-task (len(SUBTASKS) when all are done)."""
        red_down = self.cube_pos("red")[2] < HALF + 0.005
        done_pairs = 0
        for top, bottom in STAGES:
            if red_down and self._on(top, bottom) and not any(self.touching(self._geom[top])):
                done_pairs += 1
            else:
                break
        if done_pairs == len(STAGES):
            return len(SUBTASKS)
        top = STAGES[done_pairs][0]
        return 2 * done_pairs + (1 if self.is_grasped(self._geom[top]) else 0)

    def _evaluate(self) -> tuple[str, tuple[str, ...], bool]:
        k = self._stage()
        if k == len(SUBTASKS):
            return SUBTASKS[-1], SUBTASKS, True
        return SUBTASKS[k], SUBTASKS[:k], False

    def _n_object_features(self) -> int:
        return 10 * len(CUBES)

    def _object_features(self) -> np.ndarray:
        eef = self.eef_pos()
        feats = []
        for c in CUBES:
            p = self.cube_pos(c)
            feats += [p, quat_wxyz_to_xyzw(self.data.xquat[self._body[c]]), p - eef]
        return np.concatenate(feats)

    def privileged(self) -> dict[str, Any]:
        k = min(self._stage(), len(SUBTASKS) - 1)
        top, bottom = STAGES[k // 2]
        return {
            "objects": {c: {"pos": self.cube_pos(c), "quat": self.data.xquat[self._body[c]].copy(),
                            "geom": self._geom[c], "half": HALF} for c in CUBES},
            "active_object": top,
            "goal_pos": self.cube_pos(bottom) + np.array([0.0, 0.0, 2 * HALF]),
            "held": self.is_grasped(self._geom[top]),
        }


@TASKS.register("stack3")
def make_stack3(cameras: tuple[str, ...] | None = None, image_size: int = 84, horizon: int = 400,
                obs_mode: str = "image", **kwargs: Any) -> Stack3Env:
    return Stack3Env(cameras=cameras, image_size=image_size, horizon=horizon, obs_mode=obs_mode, **kwargs)
