"""`stack3`: a long-horizon task, stack the green cube on the red one, then the blue one on top.

Four sub-tasks in order: pick_green, place_green_on_red, pick_blue, place_blue_on_green. The
current one is derived from the state every step (so knocking the stack over sends the task back
to an earlier sub-task). Success only when the three-cube tower stands and the gripper has let go.
Randomised per seed: the three cube positions (>= 10 cm apart) and yaws.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from sim.tasks.native.base import NativeArmEnv
from sim.tasks.native.cubes import BODIES, CUBES, ThreeCubes
from sim.tasks.native.pick_place import HALF, sample_positions
from vla.registry import TASKS

SUBTASKS = ("pick_green", "place_green_on_red", "pick_blue", "place_blue_on_green")
# (object moved, object it goes on) per pick/place pair of sub-tasks.
STAGES = (("green", "red"), ("blue", "green"))


class Stack3Env(ThreeCubes, NativeArmEnv):
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
        return BODIES, ""

    def _setup_task(self) -> None:
        self._setup_cubes()

    def _randomize(self, rng: np.random.Generator) -> None:
        self._place_cubes(rng, sample_positions(rng, len(CUBES), 0.1))

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
        return np.concatenate(self._cube_features(self.eef_pos()))

    def privileged(self) -> dict[str, Any]:
        k = min(self._stage(), len(SUBTASKS) - 1)
        top, bottom = STAGES[k // 2]
        return {
            "objects": self._cube_objects(),
            "active_object": top,
            "goal_pos": self.cube_pos(bottom) + np.array([0.0, 0.0, 2 * HALF]),
            "held": self.is_grasped(self._geom[top]),
        }


@TASKS.register("stack3")
def make_stack3(cameras: tuple[str, ...] | None = None, image_size: int = 84, horizon: int = 400,
                obs_mode: str = "image", **kwargs: Any) -> Stack3Env:
    return Stack3Env(cameras=cameras, image_size=image_size, horizon=horizon, obs_mode=obs_mode, **kwargs)
