"""Meta-World (Farama `metaworld` 3.1.1; Yu et al., arXiv 1910.10897) tasks behind the stack's
Observation schema: `mw_<task>` for the MT10 set and every task pair that shares a scene.

- Each task is Meta-World's own environment class (its MJCF, its success criterion, its
  500-step horizon) with the object and goal positions drawn from the episode's seed (Meta-World
  samples them from numpy's global generator unless told otherwise; reset with a seed is
  deterministic here).
- Images come from our renderer (sim/render.py: no shadows or multisampling, all cameras from one
  GL context, frustum culling), not Meta-World's; its corner cameras are mounted upside down, so
  their images are turned 180 degrees (as LeRobot does).
- State: image mode = the proprio (hand xyz, gripper opening); state mode = Meta-World's whole
  39-dim observation (hand, gripper, two objects' poses, their previous values, the goal).
- Actions: Meta-World's 4-dim [dx, dy, dz, gripper] in [-1, 1].
- Instructions: a few phrasings per task; same-scene pairs (drawer open/close, ...) differ only in
  them, which is what the language ablations need.
- Experts: Meta-World's scripted policies (`metaworld.policies`), which act from the full state and
  so can take over from any state (`MetaWorldExpert`, used by `vla sim collect` and the
  intervener).

Install: `metaworld` is installed with `--no-deps` (its metadata pins mujoco 3.3.0; it runs with the
project's 3.3.x) plus `imageio` (see the Makefile and the `sim` extra).
"""

from __future__ import annotations

import string
from typing import Any, ClassVar

import gymnasium as gym
import mujoco
import numpy as np

from sim.render import MultiCameraRenderer, make_fast
from vla.data.schema import closest
from vla.registry import TASKS

# task -> instruction phrasings (the first is the canonical one)
INSTRUCTIONS: dict[str, tuple[str, ...]] = {
    "reach": ("reach the red goal", "move the gripper to the goal", "touch the target point"),
    "push": ("push the puck to the goal", "slide the puck onto the target", "push the block to the green spot"),
    "pick-place": ("pick up the puck and place it at the goal", "put the puck on the target",
                   "grasp the puck and move it to the goal"),
    "door-open": ("open the door", "pull the door open", "swing the door open"),
    "door-close": ("close the door", "push the door shut", "swing the door closed"),
    "door-lock": ("lock the door", "turn the lock down", "lock the door with the knob"),
    "door-unlock": ("unlock the door", "turn the lock up", "unlock the door with the knob"),
    "drawer-open": ("open the drawer", "pull the drawer out", "slide the drawer open"),
    "drawer-close": ("close the drawer", "push the drawer in", "slide the drawer shut"),
    "button-press-topdown": ("press the button from the top", "push the button down", "press the red button"),
    "peg-insert-side": ("insert the peg into the hole", "put the peg in the hole from the side",
                        "slide the peg into the box"),
    "window-open": ("open the window", "slide the window open", "push the window to open it"),
    "window-close": ("close the window", "slide the window shut", "push the window to close it"),
    "faucet-open": ("turn the faucet on", "open the faucet", "rotate the faucet handle to open"),
    "faucet-close": ("turn the faucet off", "close the faucet", "rotate the faucet handle to close"),
    "sweep": ("sweep the puck off the table", "push the puck off the edge", "sweep the block away"),
    "basketball": ("put the ball in the basket", "dunk the ball", "drop the ball into the hoop"),
}
MT10 = ("reach", "push", "pick-place", "door-open", "drawer-open", "drawer-close", "button-press-topdown",
        "peg-insert-side", "window-open", "window-close")
# tasks that share a scene: only the instruction tells them apart
SAME_SCENE = (("drawer-open", "drawer-close"), ("window-open", "window-close"), ("door-lock", "door-unlock"),
              ("faucet-open", "faucet-close"))
CAMERAS = ("corner", "corner2", "corner3", "corner4", "topview", "behindGripper", "gripperPOV")
FLIPPED = ("corner", "corner2", "corner3", "corner4")  # mounted upside down in Meta-World's MJCF
DEFAULT_CAMERAS = ("corner2",)
# corner2 moved in to where the Meta-World image-based literature puts it (e.g. Seo et al., Masked
# World Models, arXiv 2206.14244: cam_pos[2] = [0.75, 0.075, 0.7]), same orientation. From the MJCF's
# pose (1.3, -0.2, 1.1) the table fills a third of an 84x84 image: reach's goal and the puck are 1-3
# pixels and their positions cannot be read. None keeps the MJCF's pose.
NEAR_CORNER2 = (0.75, 0.075, 0.7)
# the arm's meshes drawn clustered on a 1 cm grid (sim.render.coarse_meshes): 68k -> 14k triangles,
# a frame 2.4x faster at 84x84, images within 0.4 grey levels on average; 0 draws the full meshes
MESH_CELL = 0.01
POLICY_NAMES = {"peg-insert-side": "SawyerPegInsertionSideV3Policy"}  # where the name does not follow the task


def task_name(mw: str) -> str:
    return "mw_" + mw.replace("-", "_")


class MetaWorldTask(gym.Env):
    metadata: ClassVar[dict[str, Any]] = {"render_modes": [], "render_fps": 80}  # 5 x 2.5 ms per control step

    def __init__(self, task: str, cameras: tuple[str, ...] | None = None, image_size: int = 84,
                 horizon: int | None = None, obs_mode: str = "image", mesh_cell: float = MESH_CELL,
                 corner2_pos: tuple[float, float, float] | None = NEAR_CORNER2) -> None:
        import metaworld

        if task not in INSTRUCTIONS:
            raise KeyError(f"unknown Meta-World task '{task}'" + closest(task, list(INSTRUCTIONS)))
        if obs_mode not in ("image", "state"):
            raise ValueError(f"obs_mode must be 'image' or 'state', got '{obs_mode}'")
        if cameras is None:
            cameras = DEFAULT_CAMERAS if obs_mode == "image" else ()
        cameras = tuple(cameras)
        for cam in cameras:
            if cam not in CAMERAS:
                raise ValueError(f"unknown camera '{cam}' for Meta-World" + closest(cam, CAMERAS))
        self.task, self.cameras, self.image_size, self.obs_mode = task, cameras, int(image_size), obs_mode
        env = metaworld.ALL_V3_ENVIRONMENTS[f"{task}-v3"]()
        # positions from the episode's seed (env.seed), not from numpy's global generator
        env._freeze_rand_vec, env._set_task_called, env._partially_observable = False, True, False
        env.seeded_rand_vec = True
        if "sawyer_observation_space" in vars(env):  # cached for the partially observable default (set_task
            del env.sawyer_observation_space  # does the same); a stale one scrambles the observation
        if corner2_pos is not None:
            if len(corner2_pos) != 3 or not np.all(np.isfinite(corner2_pos)):
                raise ValueError(f"corner2_pos must be 3 finite metres (x, y, z), got {corner2_pos}")
            env.model.cam_pos[env.model.camera("corner2").id] = corner2_pos
        self._env = env
        self.horizon = int(horizon or env.max_path_length)
        self._renderer: MultiCameraRenderer | None = None
        if cameras:
            make_fast(env.model, self.image_size, self.image_size)
            self._renderer = MultiCameraRenderer(env.model, cameras, self.image_size, self.image_size,
                                                 mesh_cell=mesh_cell)
        self.INSTRUCTIONS = INSTRUCTIONS[task]
        self.instruction = self.INSTRUCTIONS[0]
        self.raw_obs = np.zeros(39)
        self._t = 0
        d = 39 if obs_mode == "state" else 4
        self.action_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
        self.observation_space = gym.spaces.Dict({
            "images": gym.spaces.Dict({c: gym.spaces.Box(0, 255, (self.image_size, self.image_size, 3), np.uint8)
                                       for c in cameras}),
            "state": gym.spaces.Box(-np.inf, np.inf, (d,), np.float32),
            "instruction": gym.spaces.Text(256, charset=string.printable),
            "timestamp": gym.spaces.Box(0.0, np.inf, (), np.float64),
        })

    def _obs(self) -> dict[str, Any]:
        images = {}
        if self._renderer is not None:
            images = self._renderer.render(self._env.data)
            images = {c: np.ascontiguousarray(np.flip(im, (0, 1))) if c in FLIPPED else im for c, im in images.items()}
        state = self.raw_obs if self.obs_mode == "state" else self.raw_obs[:4]
        return {"images": images, "state": np.asarray(state, np.float32), "instruction": self.instruction,
                "timestamp": self._t * 0.0125}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        seed = int(self.np_random.integers(2**31 - 1)) if seed is None else int(seed)
        options = options or {}
        unknown = set(options) - {"instruction"}
        if unknown:
            raise ValueError(f"unknown reset option '{sorted(unknown)[0]}' (valid: instruction)")
        self._env.seed(seed)
        self.raw_obs, _ = self._env.reset()
        # Meta-World's reset moves the goal site in the model (site_pos) but leaves the world positions
        # the renderer draws (site_xpos) as the last step computed them: without this the first frame of
        # every episode showed the previous episode's goal (reach: 13 cm off for seed 1000)
        mujoco.mj_kinematics(self._env.model, self._env.data)
        self._t = 0
        phrasing = self.INSTRUCTIONS[seed % len(self.INSTRUCTIONS)]
        if "instruction" in options:
            if not isinstance(options["instruction"], str) or not options["instruction"].strip():
                raise ValueError("options['instruction'] must be a non-empty string")
            phrasing = options["instruction"]
        self.instruction = phrasing
        return self._obs(), {"success": False, "subtask": self.task}

    def ablation_instruction(self, kind: str) -> str:
        """For the language ablations: "wrong" - the instruction of the task that shares this scene."""
        if kind == "wrong":
            for pair in SAME_SCENE:
                if self.task in pair:
                    return INSTRUCTIONS[pair[1 - pair.index(self.task)]][0]
            raise ValueError(f"Meta-World task '{self.task}' shares its scene with no other task: no wrong instruction")
        raise ValueError(f"unknown ablation '{kind}' for Meta-World (valid: wrong)")

    def step(self, action: np.ndarray) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        a = np.clip(np.asarray(action, np.float64), -1.0, 1.0)
        self.raw_obs, reward, _, _, info = self._env.step(a)
        self._t += 1
        success = bool(info.get("success", 0.0) > 0.5)
        return self._obs(), float(success), False, self._t >= self.horizon, {
            "success": success, "subtask": self.task, "subtasks_done": [self.task] if success else [],
            "shaped_reward": float(reward)}

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        self._env.close()


class MetaWorldExpert:
    """Meta-World's scripted policy for the task, acting from the env's full state; `noise` adds
    Gaussian noise to the motion, `skill` < 1 hesitates (a held still step) with probability 1 - skill."""

    def __init__(self, env: Any, noise: float = 0.0, skill: float = 1.0, seed: int | None = None) -> None:
        import metaworld.policies as policies

        if not 0.0 <= skill <= 1.0 or noise < 0:
            raise ValueError(f"need skill in [0, 1] and noise >= 0, got {skill}, {noise}")
        self.env: MetaWorldTask = env.unwrapped
        name = POLICY_NAMES.get(self.env.task) or "Sawyer" + "".join(
            p.capitalize() for p in self.env.task.split("-")) + "V3Policy"
        self.policy = getattr(policies, name)()
        self.noise, self.skill = noise, skill
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, obs: Any, info: Any = None) -> np.ndarray:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Constant(s) may be too high": the env clips, as it says
            a = np.asarray(self.policy.get_action(self.env.raw_obs), np.float32)
        if self.skill < 1.0 and self.rng.random() > self.skill:
            a[:3] = 0.0
        if self.noise > 0:
            a[:3] += self.rng.normal(0.0, self.noise, 3).astype(np.float32)
        return np.clip(a, -1.0, 1.0)


def _register(mw: str) -> None:
    @TASKS.register(task_name(mw))
    def make(cameras: tuple[str, ...] | None = None, image_size: int = 84, horizon: int | None = None,
             obs_mode: str = "image", **kwargs: Any) -> MetaWorldTask:
        return MetaWorldTask(mw, cameras=cameras, image_size=image_size, horizon=horizon, obs_mode=obs_mode, **kwargs)


for _mw in INSTRUCTIONS:
    _register(_mw)
