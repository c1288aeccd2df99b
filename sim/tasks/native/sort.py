"""`sort`: one scene, six goals, and only the instruction says which (a same-scene language task).

Three cubes (red, green, blue) and two zones (white, black) on the table, all randomised per seed
(centres >= 13 cm apart, yaws); the goal - which cube goes to which zone - is drawn per seed
too, independently of the layout, so that no image or state can tell it: a policy that ignores
the instruction is right one time in six. Sub-tasks: `pick_cube`, `place_cube` (of the goal's
cube). Success: the goal cube rests inside the goal zone, released; a wrong cube in a zone does
not count.

`reset(options={"instruction": ...})` changes what the policy is told, not the goal: the
evaluator's language ablations (a wrong instruction of the same scene, a neutral one) go through
it. `TRAIN_TEMPLATES` are the phrasings episodes get; `HELDOUT_TEMPLATES` are kept for the
paraphrase ablation; `AUGMENT_TEMPLATES` are more phrasings for training-time instruction
augmentation (`instruction_aliases()`, `data.instruction_aliases=`), worded apart from the held-out
ones (none of their verbs or nouns).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from sim.tasks.native.base import NativeArmEnv
from sim.tasks.native.cubes import BODIES, CUBES, ThreeCubes
from sim.tasks.native.pick_place import HALF, ZONE_HALF, sample_positions
from vla.registry import TASKS

ZONES = {"white": "0.92 0.92 0.92 1", "black": "0.08 0.08 0.08 1"}
GOALS = tuple((c, z) for c in CUBES for z in ZONES)
TRAIN_TEMPLATES = ("put the {cube} cube in the {zone} zone", "place the {cube} block on the {zone} square",
                   "move the {cube} cube to the {zone} area")
HELDOUT_TEMPLATES = ("drop the {cube} cube into the {zone} region", "the {cube} block goes on the {zone} patch")
AUGMENT_TEMPLATES = ("bring the {cube} cube to the {zone} zone", "{cube} cube to {zone} zone",
                     "carry the {cube} block over to the {zone} square", "the {zone} zone needs the {cube} cube",
                     "grab the {cube} cube, then set it on the {zone} area",
                     "transfer the {cube} block onto the {zone} spot", "pick up the {cube} one for the {zone} square",
                     "sort the {cube} cube to the {zone} zone")

_SITES = "".join(f"""
<geom name="zone_{z}" type="box" pos="{0.1 * i} 0.1 0.0005" size="{ZONE_HALF} {ZONE_HALF} 0.0005" rgba="{rgba}"/>"""
                 for i, (z, rgba) in enumerate(ZONES.items()))


def instruction_for(goal: tuple[str, str], template: str) -> str:
    return template.format(cube=goal[0], zone=goal[1])


def instruction_aliases() -> dict[str, list[str]]:
    """Every training phrasing -> the other training and the augmentation phrasings of its goal."""
    return {instruction_for(g, t): [instruction_for(g, u) for u in (*TRAIN_TEMPLATES, *AUGMENT_TEMPLATES) if u != t]
            for g in GOALS for t in TRAIN_TEMPLATES}


class SortEnv(ThreeCubes, NativeArmEnv):
    TASK = "sort"
    # every training phrasing of every goal (tables of instruction embeddings enumerate these)
    INSTRUCTIONS: ClassVar[tuple[str, ...]] = tuple(instruction_for(g, t) for g in GOALS for t in TRAIN_TEMPLATES)
    SUBTASKS: ClassVar[tuple[str, ...]] = ("pick_cube", "place_cube")
    DEFAULT_HORIZON = 200

    def _task_xml(self) -> tuple[str, str]:
        return BODIES, _SITES

    def _setup_task(self) -> None:
        self._setup_cubes()
        self._zone = {z: self.model.geom(f"zone_{z}").id for z in ZONES}
        self.goal = GOALS[0]

    def _randomize(self, rng: np.random.Generator) -> None:
        # cubes, then zones: every centre a zone's width plus a centimetre from every other
        xy = sample_positions(rng, len(CUBES) + len(ZONES), 2 * ZONE_HALF + 0.01)
        self._place_cubes(rng, xy)
        for j, z in enumerate(ZONES):
            self.model.geom_pos[self._zone[z], :2] = xy[len(CUBES) + j]
        self.goal = GOALS[int(rng.integers(len(GOALS)))]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        obs, info = super().reset(seed=seed, options=options)
        if not (options and "instruction" in options):
            # the base drew a phrasing from INSTRUCTIONS; keep its template, say this episode's goal
            template = TRAIN_TEMPLATES[self.INSTRUCTIONS.index(self.instruction) % len(TRAIN_TEMPLATES)]
            self.instruction = instruction_for(self.goal, template)
            obs["instruction"] = self.instruction
        info["goal"] = list(self.goal)
        return obs, info

    def ablation_instruction(self, kind: str) -> str:
        """For the evaluator's language ablations, after a reset: "wrong" - another goal of this
        scene (drawn from the goal, so the same seed gets the same one); "heldout" - this goal in a
        phrasing never used for training."""
        k = GOALS.index(self.goal)
        if kind == "wrong":
            other = GOALS[(k + 1 + k * 7 % (len(GOALS) - 1)) % len(GOALS)]
            return instruction_for(other, TRAIN_TEMPLATES[0])
        if kind == "heldout":
            return instruction_for(self.goal, HELDOUT_TEMPLATES[k % len(HELDOUT_TEMPLATES)])
        raise ValueError(f"unknown ablation '{kind}' (valid: wrong, heldout)")

    def zone_pos(self, name: str) -> np.ndarray:
        return np.array([*self.model.geom_pos[self._zone[name], :2], 0.0])

    def _inside(self, cube: str, zone: str) -> bool:
        p, z = self.cube_pos(cube), self.zone_pos(zone)
        return bool(np.all(np.abs(p[:2] - z[:2]) < ZONE_HALF - 0.01)) and p[2] < HALF + 0.01

    def _evaluate(self) -> tuple[str, tuple[str, ...], bool]:
        cube, zone = self.goal
        held = self.is_grasped(self._geom[cube])
        if self._inside(cube, zone) and not any(self.touching(self._geom[cube])):
            return "place_cube", ("pick_cube", "place_cube"), True
        if held:
            return "place_cube", ("pick_cube",), False
        return "pick_cube", (), False

    def _n_object_features(self) -> int:
        return 10 * len(CUBES) + 3 * len(ZONES)

    def _object_features(self) -> np.ndarray:
        return np.concatenate([*self._cube_features(self.eef_pos()), *(self.zone_pos(z) for z in ZONES)])

    def privileged(self) -> dict[str, Any]:
        cube, zone = self.goal
        return {
            "objects": self._cube_objects(),
            "active_object": cube,
            "goal_pos": self.zone_pos(zone) + np.array([0.0, 0.0, HALF]),
            "zone_pos": self.zone_pos(zone),
            "held": self.is_grasped(self._geom[cube]),
            "goal": (cube, zone),
        }


@TASKS.register("sort")
def make_sort(cameras: tuple[str, ...] | None = None, image_size: int = 84, horizon: int = 200,
              obs_mode: str = "image", **kwargs: Any) -> SortEnv:
    return SortEnv(cameras=cameras, image_size=image_size, horizon=horizon, obs_mode=obs_mode, **kwargs)
