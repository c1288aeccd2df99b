"""Base class of the native MuJoCo tasks: a 7-DoF arm with a parallel gripper on a table.

Control follows robosuite's OSC_POSE delta convention, 20 Hz: action float32[7] in [-1, 1] =
end-effector delta position (x 0.05 m), delta rotation axis-angle in the world frame (x 0.5 rad),
gripper (-1 open, +1 close). The pose delta becomes joint targets by one damped-least-squares
step on the site Jacobian (with a null-space pull to the home posture, which keeps the redundant
seventh joint from drifting); stiff joint position servos with gravity compensation track them.
We chose IK + servos over a mocap weld because the arm then stays a real articulated arm
(contacts push back on it) while costing one 6x7 solve per control step.

Observation (vla.interfaces.Observation): `state` in image mode is the robomimic proprio
(eef pos 3, eef quat xyzw 4, finger positions 2); state mode appends the task's object features.
"""

from __future__ import annotations

import string
from typing import Any, ClassVar

import gymnasium as gym
import mujoco
import numpy as np

from sim.render import MultiCameraRenderer, make_fast
from vla.evaluation import OBS_MODES
from vla.robot.arm import (
    ARM_JOINTS,
    CONTROL_DT,
    FINGER_MAX,
    HOME_QPOS,
    POS_SCALE,
    PROPRIO_DIM,
    ROT_SCALE,
    WORKSPACE_HI,
    WORKSPACE_LO,
    build_model,
    dls_joint_targets,
    gripper_target,
)
from vla.robot.rotations import quat_wxyz_to_xyzw

# the arm and its control convention are the robot's, shared with the robot path (vla.robot.arm)
__all__ = ["ARM_JOINTS", "CONTROL_DT", "FINGER_MAX", "HOME_QPOS", "OBS_MODES", "POS_SCALE", "PROPRIO_DIM",
           "ROT_SCALE", "WORKSPACE_HI", "WORKSPACE_LO", "NativeArmEnv", "build_model", "dls_joint_targets",
           "gripper_target", "quat_wxyz_to_xyzw"]


class NativeArmEnv(gym.Env):
    """gymnasium.Env for one native task; subclasses define objects, randomisation and success."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 20}
    TASK: ClassVar[str] = ""
    INSTRUCTIONS: ClassVar[tuple[str, ...]] = ()
    SUBTASKS: ClassVar[tuple[str, ...]] = ()
    DEFAULT_CAMERAS: ClassVar[tuple[str, ...]] = ("agentview", "robot0_eye_in_hand")
    VIEW_CAMERA: ClassVar[str] = "sideview"  # the camera of videos people watch (not a policy input)
    DEFAULT_HORIZON: ClassVar[int] = 200

    def __init__(self, cameras: tuple[str, ...] | list[str] | None = None, image_size: int = 84,
                 horizon: int | None = None, obs_mode: str = "image", terminate_on_success: bool = True) -> None:
        if obs_mode not in OBS_MODES:
            raise ValueError(f"unknown obs_mode '{obs_mode}' (valid: {', '.join(OBS_MODES)})")
        horizon = self.DEFAULT_HORIZON if horizon is None else int(horizon)
        if horizon <= 0:
            raise ValueError(f"horizon must be positive, got {horizon}")
        if int(image_size) <= 0:
            raise ValueError(f"image_size must be positive, got {image_size}")
        bodies, sites = self._task_xml()
        self.model = build_model(bodies, sites)
        self.data = mujoco.MjData(self.model)
        self.cameras = tuple(self.DEFAULT_CAMERAS if cameras is None else cameras)
        valid = [mujoco.mj_id2name(self.model, mujoco.mjtObj.mjOBJ_CAMERA, i) for i in range(self.model.ncam)]
        if len(set(self.cameras)) != len(self.cameras):
            raise ValueError(f"camera names repeat in {self.cameras}")
        for cam in self.cameras:
            if cam not in valid:
                raise ValueError(f"unknown camera '{cam}' for task '{self.TASK}' (valid: {', '.join(valid)})")
        self.image_size, self.horizon, self.obs_mode = int(image_size), horizon, obs_mode
        self.terminate_on_success = terminate_on_success
        make_fast(self.model, self.image_size, self.image_size)
        self._renderer: MultiCameraRenderer | None = None
        self._view: MultiCameraRenderer | None = None
        self.n_substeps = round(CONTROL_DT / self.model.opt.timestep)

        m = self.model
        self._arm_qadr = np.array([m.jnt_qposadr[m.joint(j).id] for j in ARM_JOINTS])
        self._arm_dadr = np.array([m.jnt_dofadr[m.joint(j).id] for j in ARM_JOINTS])
        self._arm_range = np.array([m.jnt_range[m.joint(j).id] for j in ARM_JOINTS])
        self._finger_qadr = np.array([m.jnt_qposadr[m.joint(j).id] for j in ("finger_l", "finger_r")])
        self._finger_dadr = np.array([m.jnt_dofadr[m.joint(j).id] for j in ("finger_l", "finger_r")])
        self._grip_site = m.site("grip").id
        self._pad_ids = (m.geom("pad_l").id, m.geom("pad_r").id)
        self._pad_contacts: tuple[set[int], set[int]] | None = None  # per-step cache
        self._jacp = np.zeros((3, m.nv))
        self._jacr = np.zeros((3, m.nv))
        self._setup_task()

        state_dim = PROPRIO_DIM + (self._n_object_features() if obs_mode == "state" else 0)
        self.state_dim = state_dim
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(7,), dtype=np.float32)
        self.observation_space = gym.spaces.Dict({
            "images": gym.spaces.Dict({c: gym.spaces.Box(0, 255, (self.image_size, self.image_size, 3), np.uint8)
                                       for c in self.cameras}),
            "state": gym.spaces.Box(-np.inf, np.inf, (state_dim,), np.float32),
            # Complete, so gymnasium's vector envs can batch observations (instructions as a tuple).
            "instruction": gym.spaces.Text(256, charset=string.printable),
            "timestamp": gym.spaces.Box(0.0, np.inf, (), np.float64),
        })
        self._t = 0
        self.instruction = self.INSTRUCTIONS[0]
        self._subtask, self._done_subtasks, self._success = self.SUBTASKS[0], (), False

    # ---- task hooks -------------------------------------------------------------------------------
    def _task_xml(self) -> tuple[str, str]:
        raise NotImplementedError

    def _setup_task(self) -> None:
        """Cache ids of task objects (called once the model exists)."""

    def _randomize(self, rng: np.random.Generator) -> None:
        raise NotImplementedError

    def _evaluate(self) -> tuple[str, tuple[str, ...], bool]:
        """(current sub-task, finished sub-tasks, success) from the current state."""
        raise NotImplementedError

    def _n_object_features(self) -> int:
        raise NotImplementedError

    def _object_features(self) -> np.ndarray:
        return self.features_from_poses(self.object_poses(), self.eef_pos())

    # What a robot with a pose estimator has: the world-frame poses of OBJECT_POSES, from which it
    # computes the object part of the state the way the simulator does (the MuJoCo bridge publishes
    # the poses, the policy node calls `features_from_poses` with the hand position of its own FK).
    OBJECT_POSES: ClassVar[tuple[str, ...]] = ()

    def object_poses(self) -> np.ndarray:
        """float64 [len(OBJECT_POSES), 7]: position and quaternion (xyzw) of each, in the world frame."""
        raise NotImplementedError(f"task '{self.TASK}' publishes no object poses")

    @classmethod
    def features_from_poses(cls, poses: np.ndarray, eef_pos: np.ndarray) -> np.ndarray:
        """The state's object features (`obs_mode=state`, after the proprioception) from `object_poses()`
        and the grip site's position."""
        raise NotImplementedError(f"task '{cls.TASK}' has no object features from poses")

    def privileged(self) -> dict[str, Any]:
        """Object poses etc. for experts; includes `active_object` and its `goal_pos` (centre)."""
        raise NotImplementedError

    # ---- robot state ------------------------------------------------------------------------------
    def eef_pos(self) -> np.ndarray:
        return self.data.site_xpos[self._grip_site].copy()

    def eef_mat(self) -> np.ndarray:
        return self.data.site_xmat[self._grip_site].reshape(3, 3).copy()

    def eef_quat(self) -> np.ndarray:
        """End-effector orientation as a quaternion (x, y, z, w), w >= 0, as in the observation."""
        q = np.empty(4)
        mujoco.mju_mat2Quat(q, self.data.site_xmat[self._grip_site])
        if q[0] < 0:
            q = -q
        return quat_wxyz_to_xyzw(q)

    def finger_qpos(self) -> np.ndarray:
        return self.data.qpos[self._finger_qadr].copy()

    def finger_qvel(self) -> np.ndarray:
        return self.data.qvel[self._finger_dadr].copy()

    def gripper_opening(self) -> float:
        """Distance between the finger pads (m)."""
        return float(self.data.qpos[self._finger_qadr].sum())

    def subtask(self) -> str:
        return self._subtask

    def touching(self, geom_id: int) -> tuple[bool, bool]:
        """Whether the left and right finger pads touch the geom (contacts of the last physics step)."""
        if self._pad_contacts is None:
            self._pad_contacts = (set(), set())
            d = self.data
            if d.ncon:
                pairs = d.contact.geom[: d.ncon]
                for side, pad in enumerate(self._pad_ids):
                    self._pad_contacts[side].update(pairs[pairs[:, 0] == pad, 1].tolist())
                    self._pad_contacts[side].update(pairs[pairs[:, 1] == pad, 0].tolist())
        return geom_id in self._pad_contacts[0], geom_id in self._pad_contacts[1]

    def is_grasped(self, geom_id: int) -> bool:
        left, right = self.touching(geom_id)
        return left and right

    # ---- gymnasium API ----------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        rng = self.np_random
        m, d = self.model, self.data
        mujoco.mj_resetData(m, d)
        d.qpos[self._arm_qadr] = HOME_QPOS
        d.qpos[self._finger_qadr] = FINGER_MAX
        d.ctrl[:7] = HOME_QPOS
        d.ctrl[7:9] = FINGER_MAX
        self._randomize(rng)
        self.instruction = self.INSTRUCTIONS[int(rng.integers(len(self.INSTRUCTIONS)))]
        options = options or {}
        unknown = set(options) - {"instruction"}
        if unknown:
            raise ValueError(f"unknown reset option '{sorted(unknown)[0]}' (valid: instruction)")
        if "instruction" in options:
            if not isinstance(options["instruction"], str) or not options["instruction"].strip():
                raise ValueError("options['instruction'] must be a non-empty string")
            self.instruction = options["instruction"]
        mujoco.mj_forward(m, d)
        self._pad_contacts = None
        self._t = 0
        self._subtask, self._done_subtasks, self._success = self._evaluate()
        return self._obs(), self._info()

    def step(self, action: np.ndarray) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        a = np.asarray(action, dtype=np.float64)
        if a.shape != (7,):
            raise ValueError(f"action must have shape (7,) (dpos 3, drot 3, gripper 1), got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"action contains NaN or inf at index {int(np.argwhere(~np.isfinite(a))[0][0])}: {a}")
        a = np.clip(a, -1.0, 1.0)
        self._apply_action(a)
        return self._advance()

    def step_joints(self, arm_targets: np.ndarray, finger_target: float
                    ) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """One control step with joint-POSITION targets instead of an EE delta (the robot bridge,
        `real.ros.bridge_node`, drives the arm like a ros2_control position controller).

        `arm_targets` float[7] (rad) and `finger_target` (m, per finger) must lie in the joint
        ranges: a bad command is an error here, the bridge validates and rejects before calling.
        """
        q = np.asarray(arm_targets, dtype=np.float64)
        if q.shape != (7,):
            raise ValueError(f"arm_targets must have shape (7,), got {q.shape}")
        g = float(finger_target)
        if not (np.all(np.isfinite(q)) and np.isfinite(g)):
            raise ValueError(f"joint targets must be finite, got arm {q}, finger {g}")
        lo, hi = self._arm_range[:, 0], self._arm_range[:, 1]
        if np.any(q < lo) or np.any(q > hi):
            bad = [ARM_JOINTS[i] for i in np.flatnonzero((q < lo) | (q > hi))]
            raise ValueError(f"arm targets of joints {bad} outside their ranges: {q}")
        if not 0.0 <= g <= FINGER_MAX:
            raise ValueError(f"finger_target must be in [0, {FINGER_MAX}], got {g}")
        self.data.ctrl[:7] = q
        self.data.ctrl[7:9] = g
        return self._advance()

    def arm_qpos(self) -> np.ndarray:
        return self.data.qpos[self._arm_qadr].copy()

    def arm_qvel(self) -> np.ndarray:
        return self.data.qvel[self._arm_dadr].copy()

    def arm_range(self) -> np.ndarray:
        """float[7, 2] (lower, upper) of the arm joints (rad)."""
        return self._arm_range.copy()

    def _advance(self) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        mujoco.mj_step(self.model, self.data, nstep=self.n_substeps)
        # Poses (and Jacobians) for the observation and the next action: kinematics only, cheap.
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)
        self._pad_contacts = None
        self._t += 1
        self._subtask, self._done_subtasks, self._success = self._evaluate()
        terminated = self._success and self.terminate_on_success
        truncated = self._t >= self.horizon
        return self._obs(), float(self._success), terminated, truncated, self._info()

    def render(self) -> np.ndarray:
        """The first camera's image (gymnasium's rgb_array mode)."""
        cams = self.cameras or self.DEFAULT_CAMERAS[:1]
        return self._render_images(cams)[cams[0]]

    def render_view(self, size: int = 256, camera: str = "") -> np.ndarray:
        """uint8[size, size, 3] from a viewing camera (`VIEW_CAMERA` unless named), for videos: its own
        renderer, so the policy's cameras and their image size are untouched."""
        cams = (camera or self.VIEW_CAMERA,)
        if self._view is None or self._view.cameras != cams or self._view.height != size:
            if self._view is not None:
                self._view.close()
            self._view = MultiCameraRenderer(self.model, cams, size)
        return self._view.render(self.data)[cams[0]]

    def close(self) -> None:
        for r in (self._renderer, self._view):
            if r is not None:
                r.close()
        self._renderer = self._view = None

    # ---- internals --------------------------------------------------------------------------------
    def _apply_action(self, a: np.ndarray) -> None:
        d = self.data
        d.ctrl[:7] = dls_joint_targets(self.model, d, self._grip_site, self._arm_qadr, self._arm_dadr,
                                       self._arm_range, a, self._jacp, self._jacr)
        d.ctrl[7:9] = gripper_target(a[6])

    def _proprio(self) -> np.ndarray:
        fq = self.finger_qpos()
        return np.concatenate([self.eef_pos(), self.eef_quat(), [fq[0], -fq[1]]])

    def _obs(self) -> dict[str, Any]:
        state = self._proprio()
        if self.obs_mode == "state":
            state = np.concatenate([state, self._object_features()])
        return {"images": self._render_images(self.cameras), "state": state.astype(np.float32),
                "instruction": self.instruction, "timestamp": float(self.data.time)}

    def _render_images(self, cams: tuple[str, ...]) -> dict[str, np.ndarray]:
        if not cams:
            return {}
        if self._renderer is None or self._renderer.cameras != cams:
            if self._renderer is not None:
                self._renderer.close()
            self._renderer = MultiCameraRenderer(self.model, cams, self.image_size)
        return self._renderer.render(self.data)

    def _info(self) -> dict[str, Any]:
        return {"success": bool(self._success), "subtask": self._subtask,
                "subtasks_done": list(self._done_subtasks), "step": self._t}
