"""robosuite tasks `lift`, `can` (PickPlaceCan) and `square` (NutAssemblySquare) with robomimic's
settings (Panda, OSC_POSE delta control at 20 Hz, `agentview` + `robot0_eye_in_hand` at 84x84,
horizon 400), behind the gymnasium API and the stack's Observation dict.

Rendering: with `fast_render=True` (default) robosuite's own renderer is switched off and each env
renders its sim with one `sim.render.MultiCameraRenderer` (see sim/tasks/robosuite_render.py): no
shadows, no multisampling, no reflections, an offscreen buffer of exactly the image size, frustum
culling, simplified visual meshes. `fast_render=False` keeps robosuite's defaults (its renderer,
its `env.step` and its hard reset) for comparison in benchmarks/bench_sim.py.

Stepping: with `fast_render=True` and `lean_step=True` (default) a control step runs through
sim/tasks/robosuite_lean.py, which computes the same OSC torques as robosuite with ~3x less Python
per physics substep (same dynamics up to float rounding, see that module).
"""

from __future__ import annotations

import os

# OSMesa is the only offscreen GL on CPU machines; it must be chosen before mujoco is imported.
os.environ.setdefault("MUJOCO_GL", "osmesa")

import functools
import string
from typing import Any, ClassVar

import gymnasium as gym
import mujoco
import numpy as np

from sim.tasks.robosuite_render import FastRenderer, decimate_visual_meshes
from sim.tasks.robosuite_specs import (  # noqa: F401  (re-exported)
    _BINS_CAMERAS,
    _TABLE_CAMERAS,
    SPECS,
    TaskSpec,
    quiet_robosuite_import,
)
from vla.data.schema import closest

with quiet_robosuite_import():
    import robosuite
    from robosuite.controllers import load_composite_controller_config

    from sim.tasks import robosuite_lean

DEFAULT_CAMERAS = ("agentview", "robot0_eye_in_hand")
CONTROL_HZ = 20
ACTION_DIM = 7
# Vertex-clustering size for the visual meshes in fast mode: at 84x84 a pixel of agentview spans
# ~1 cm on the table, so 8 mm changes little (benchmarks/results/sim.md shows the images).
DEFAULT_MESH_VOXEL = 0.008
# Large meshes are clustered at 3% of their bounding-box diagonal when that is coarser (the 1.3 m
# pedestal: 33k -> 3k triangles); the gripper, 5-10 cm from the wrist camera, at 4 mm.
MESH_RELATIVE_VOXEL = 0.03
MESH_PREFIX_VOXELS = (("gripper", 0.004),)
PROPRIO_DIM = 9  # eef_pos 3 + eef_quat 4 + gripper_qpos 2, as robomimic's low-dim proprio
class RobosuiteTask(gym.Env):
    """One robosuite task. Observation = {images, state, instruction, timestamp} (vla.interfaces).

    `cameras=None` means the two robomimic cameras in image mode and none in state mode; `()` never
    renders. Image mode state = proprio (9); state mode appends robosuite's `object-state`.
    `mesh_voxel` (fast rendering with cameras only): simplify visual-only meshes to this voxel
    size in metres; None keeps robosuite's full meshes. `cull=False` turns frustum culling off and
    `lean_step=False` keeps robosuite's `env.step` in fast mode (both for benchmarks).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": [], "render_fps": CONTROL_HZ}  # the control rate

    def __init__(self, task: str, cameras: tuple[str, ...] | None = None, image_size: int = 84,
                 horizon: int = 400, obs_mode: str = "image", fast_render: bool = True,
                 mesh_voxel: float | None = DEFAULT_MESH_VOXEL, cull: bool = True, lean_step: bool = True) -> None:
        if task not in SPECS:
            raise KeyError(f"unknown robosuite task '{task}'" + closest(task, list(SPECS)))
        if obs_mode not in ("image", "state"):
            raise ValueError(f"obs_mode must be 'image' or 'state', got '{obs_mode}'")
        if not isinstance(image_size, (int, np.integer)) or image_size < 8:
            raise ValueError(f"image_size must be an int >= 8, got {image_size!r}")
        if not isinstance(horizon, (int, np.integer)) or horizon < 1:
            raise ValueError(f"horizon must be a positive int, got {horizon!r}")
        self.spec_ = SPECS[task]
        if cameras is None:
            cameras = DEFAULT_CAMERAS if obs_mode == "image" else ()
        if isinstance(cameras, str):
            raise TypeError(f"cameras must be a tuple of camera names, got the string '{cameras}'")
        cameras = tuple(cameras)
        for cam in cameras:
            if cam not in self.spec_.cameras:
                raise ValueError(f"unknown camera '{cam}' for task '{task}'" + closest(cam, self.spec_.cameras))
        self.task, self.cameras, self.image_size = task, cameras, int(image_size)
        self.horizon, self.obs_mode, self.fast_render = int(horizon), obs_mode, fast_render
        self._cull = cull

        robosuite_cams = bool(cameras) and not fast_render
        # hard_reset=True (robosuite's default) recompiles the model at every reset; the fast path
        # keeps one model so that the renderer and its uploaded meshes survive resets.
        self._env = robosuite.make(
            self.spec_.env_name, robots=["Panda"],
            controller_configs=load_composite_controller_config(controller="BASIC"),
            has_renderer=False, has_offscreen_renderer=robosuite_cams, use_camera_obs=robosuite_cams,
            camera_names=list(cameras) if robosuite_cams else "agentview",
            camera_heights=self.image_size, camera_widths=self.image_size,
            use_object_obs=True, control_freq=CONTROL_HZ, horizon=self.horizon, ignore_done=True,
            reward_shaping=False, hard_reset=not fast_render, seed=0, **self.spec_.env_kwargs)
        if fast_render:
            # Recompile once with simplified visual meshes (physics unchanged, see robosuite_render).
            # Without cameras or decimation the model is recompiled all the same: robosuite samples
            # object sizes (e.g. Lift's cube) at each model load, so that every variant of a task
            # gets the same objects.
            if cameras and mesh_voxel:
                self._env.set_xml_processor(functools.partial(
                    decimate_visual_meshes, voxel=float(mesh_voxel), relative=MESH_RELATIVE_VOXEL,
                    prefix_voxels=MESH_PREFIX_VOXELS))
            self._env.hard_reset = True
            self._env.reset()
            self._env.hard_reset = False
        self._renderer: FastRenderer | None = None
        self._lean_wanted = fast_render and lean_step and robosuite_lean.supported(self._env)
        self._lean: robosuite_lean.LeanStepper | None = None
        self._grasp_key: tuple[int, str] | None = None
        self._grasp_pads: list[list[np.ndarray]] = []
        self._grasp_object = np.zeros(0, dtype=bool)
        self._raw: dict[str, np.ndarray] = {}
        self._t = 0
        self._seed = 0
        self.instruction = self.spec_.instructions[0]

        self.action_space = gym.spaces.Box(-1.0, 1.0, (ACTION_DIM,), np.float32)
        self._env.reset()
        self._raw = self._env._get_observations(force_update=True)
        state_dim = len(self._state())
        self.observation_space = gym.spaces.Dict({
            "images": gym.spaces.Dict({c: gym.spaces.Box(0, 255, (self.image_size, self.image_size, 3), np.uint8)
                                       for c in cameras}),
            "state": gym.spaces.Box(-np.inf, np.inf, (state_dim,), np.float32),
            "instruction": gym.spaces.Text(max_length=200, charset=string.printable),
            "timestamp": gym.spaces.Box(0.0, np.inf, (), np.float64),
        })

    # --- gymnasium API -------------------------------------------------------------------------

    @property
    def INSTRUCTIONS(self) -> tuple[str, ...]:  # the native tasks' class constant, per instance here
        """Every phrasing of this task's instruction (the native tasks' `INSTRUCTIONS`)."""
        return tuple(self.spec_.instructions)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        if seed is None:
            # Without a seed, draw one from the env's generator so that a seeded sequence of
            # resets stays reproducible.
            seed = int(self.np_random.integers(2**31 - 1))
        self._seed = int(seed)
        # robosuite's placement samplers and robot init noise all hold this one Generator
        # (also across hard resets), so setting its state in place seeds every draw.
        self._env.rng.bit_generator.state = np.random.default_rng(self._seed).bit_generator.state
        np.random.seed(self._seed % 2**32)  # observation noise/delay helpers use the global RNG
        self._make_robosuite_context_current()
        self._raw = self._env.reset()
        options = options or {}
        instruction = options.get("instruction")
        if instruction is not None and (not isinstance(instruction, str) or not instruction.strip()):
            raise ValueError(f"options['instruction'] must be a non-empty string, got {instruction!r}")
        self.instruction = instruction or self.spec_.instructions[self._seed % len(self.spec_.instructions)]
        self._t = 0
        return self._obs(), self._info()

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        a = np.asarray(action, dtype=np.float64)
        if a.shape != (ACTION_DIM,):
            raise ValueError(f"action must have shape ({ACTION_DIM},) (delta pos 3, delta rot 3, gripper 1), "
                             f"got shape {a.shape}")
        if not np.all(np.isfinite(a)):
            bad = int(np.flatnonzero(~np.isfinite(a))[0])
            raise ValueError(f"action has a non-finite value {a[bad]} at index {bad}")
        self._make_robosuite_context_current()
        a = np.clip(a, -1.0, 1.0)
        if self._lean_wanted:
            if self._lean is None or self._lean.data is not self._env.sim.data._data:
                self._lean = robosuite_lean.LeanStepper(self._env)
            self._raw, reward = self._lean.step(a)
        else:
            self._raw, reward, _, _ = self._env.step(a)
        self._t += 1
        info = self._info()
        terminated = info["success"]
        truncated = self._t >= self.horizon and not terminated
        return self._obs(), float(reward), terminated, truncated, info

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        self._env.close()

    # --- what experts and interveners need -----------------------------------------------------

    @property
    def robosuite_env(self) -> Any:
        return self._env

    def eef_pos(self) -> np.ndarray:
        return np.asarray(self._raw["robot0_eef_pos"], dtype=np.float64).copy()

    def eef_quat(self) -> np.ndarray:
        """Quaternion (x, y, z, w), robosuite's convention."""
        return np.asarray(self._raw["robot0_eef_quat"], dtype=np.float64).copy()

    def eef_mat(self) -> np.ndarray:
        """End-effector rotation matrix (world frame), the form sim/intervener.py uses."""
        x, y, z, w = self._raw["robot0_eef_quat"]
        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, np.array([w, x, y, z], dtype=np.float64))
        return mat.reshape(3, 3)

    def gripper_opening(self) -> float:
        """Distance between the two finger joints in metres (about 0.08 open, 0 closed)."""
        q = self._raw["robot0_gripper_qpos"]
        return float(q[0] - q[1])

    def success(self) -> bool:
        return bool(self._env._check_success())

    def grasped(self) -> bool:
        """robosuite's `_check_grasp` (both finger pads touch the target object) on geom ids: its
        own loops over contacts by geom name cost ~0.2 ms per call, and this runs every step."""
        model = self._env.sim.model._model
        target = self._target_object()
        key = (id(model), target.name)
        if self._grasp_key != key:
            env = self._env
            grippers = env.robots[0].gripper
            grippers = list(grippers.values()) if isinstance(grippers, dict) else [grippers]

            def mask(names: Any) -> np.ndarray:  # geom id -> member of the group
                out = np.zeros(model.ngeom, dtype=bool)
                out[[env.sim.model.geom_name2id(n) for n in ([names] if isinstance(names, str) else names)]] = True
                return out

            self._grasp_pads = [[mask(g.important_geoms[side]) for side in ("left_fingerpad", "right_fingerpad")]
                                for g in grippers]
            self._grasp_object = mask(target.contact_geoms)
            self._grasp_key = key
        pairs = self._env.sim.data._data.contact.geom
        a, b = pairs[:, 0], pairs[:, 1]
        in_a, in_b = self._grasp_object[a], self._grasp_object[b]
        return any(all(bool(np.any((pad[a] & in_b) | (pad[b] & in_a))) for pad in pads) for pads in self._grasp_pads)

    def subtask(self, success: bool | None = None) -> str:
        """Current sub-task; `success` if the caller has just computed it (each check costs)."""
        if self.success() if success is None else success:
            return "done"
        if self.grasped():
            return {"lift": "lift", "can": "place", "square": "insert"}[self.task]
        dist = np.linalg.norm(self.eef_pos() - self._grasp_pos())
        return "grasp" if dist < 0.03 else "reach"

    def _grasp_pos(self) -> np.ndarray:
        """privileged()["grasp_pos"] without the rest (subtask() runs every step)."""
        env, data = self._env, self._env.sim.data
        if self.task == "lift":
            return data.body_xpos[env.cube_body_id].copy()
        if self.task == "can":
            return data.body_xpos[env.obj_body_id[env.objects[env.object_id].name]].copy()
        return data.site_xpos[env.sim.model.site_name2id(env.nuts[0].important_sites["handle"])].copy()

    def privileged(self) -> dict[str, Any]:
        """Object poses and targets in the world frame (positions m, quaternions x, y, z, w)."""
        env, data = self._env, self._env.sim.data
        out: dict[str, Any] = {"eef_pos": self.eef_pos(), "eef_quat": self.eef_quat(),
                               "gripper_opening": self.gripper_opening(), "grasped": self.grasped()}
        if self.task == "lift":
            out["object_pos"] = data.body_xpos[env.cube_body_id].copy()
            out["object_quat"] = _wxyz_to_xyzw(data.body_xquat[env.cube_body_id])
            out["grasp_pos"] = out["object_pos"]
            out["table_height"] = float(env.model.mujoco_arena.table_offset[2])
        elif self.task == "can":
            body = env.obj_body_id[env.objects[env.object_id].name]
            out["object_pos"] = data.body_xpos[body].copy()
            out["object_quat"] = _wxyz_to_xyzw(data.body_xquat[body])
            out["grasp_pos"] = out["object_pos"]
            out["target_pos"] = env.target_bin_placements[env.object_id].copy()
            out["bin_size"] = np.asarray(env.bin_size, dtype=np.float64).copy()
        else:
            nut = env.nuts[0]
            body = env.obj_body_id[nut.name]
            out["object_pos"] = data.body_xpos[body].copy()
            out["object_quat"] = _wxyz_to_xyzw(data.body_xquat[body])
            out["grasp_pos"] = data.site_xpos[env.sim.model.site_name2id(nut.important_sites["handle"])].copy()
            out["target_pos"] = data.body_xpos[env.peg1_body_id].copy()
        return out

    # --- internals ------------------------------------------------------------------------------

    def _target_object(self) -> Any:
        env = self._env
        if self.task == "lift":
            return env.cube
        if self.task == "can":
            return env.objects[env.object_id]
        return env.nuts[0]

    def _make_robosuite_context_current(self) -> None:
        # robosuite renders without making its GL context current; another env's renderer in
        # this process may own the current context, and robosuite would then draw into it.
        ctx = getattr(self._env.sim, "_render_context_offscreen", None) if self._env.use_camera_obs else None
        if ctx is not None:
            ctx.gl_ctx.make_current()

    def _state(self) -> np.ndarray:
        raw = self._raw
        parts = [raw["robot0_eef_pos"], raw["robot0_eef_quat"], raw["robot0_gripper_qpos"]]
        if self.obs_mode == "state":
            parts.append(raw["object-state"])
        return np.concatenate(parts).astype(np.float32)

    def _images(self) -> dict[str, np.ndarray]:
        if not self.cameras:
            return {}
        if not self.fast_render:
            # robosuite renders in OpenGL convention (bottom row first): flip to upright.
            return {c: np.ascontiguousarray(self._raw[f"{c}_image"][::-1]) for c in self.cameras}
        sim = self._env.sim
        if self._renderer is None or self._renderer.model is not sim.model._model:
            if self._renderer is not None:
                self._renderer.close()
            self._renderer = FastRenderer(sim.model._model, self.image_size, cull=self._cull)
        return self._renderer.render(sim.data._data, self.cameras)

    def _obs(self) -> dict[str, Any]:
        return {"images": self._images(), "state": self._state(), "instruction": self.instruction,
                "timestamp": self._t / CONTROL_HZ}

    def _info(self) -> dict[str, Any]:
        success = self.success()
        return {"success": success, "subtask": self.subtask(success), "seed": self._seed}


def _wxyz_to_xyzw(q: np.ndarray) -> np.ndarray:
    return np.array([q[1], q[2], q[3], q[0]], dtype=np.float64)


def _factory(task: str) -> Any:
    def make(cameras: tuple[str, ...] | None = None, image_size: int = 84, horizon: int = 400,
             obs_mode: str = "image", fast_render: bool = True) -> RobosuiteTask:
        return RobosuiteTask(task, cameras=cameras, image_size=image_size, horizon=horizon,
                             obs_mode=obs_mode, fast_render=fast_render)

    make.__name__ = f"make_{task}"
    make.__doc__ = f"robosuite {SPECS[task].env_name} with robomimic's settings (see RobosuiteTask)."
    return make
