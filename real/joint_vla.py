"""Joint-space adapter: the trained VLA (EE-delta actions) behind a joint-position `Policy`.

The VLA was trained in simulation on end-effector deltas (dpos 3, drot 3, gripper 1, in [-1, 1])
with state = (eef pos 3, eef quat xyzw 4, finger qpos 2) (`NativeArmEnv._proprio`). A robot (and the
policy node) speaks joint positions: state = 7 arm joints + a gripper joint, commands = absolute
joint-position targets. This adapter bridges the two on a *kinematic copy* of the native arm's
MuJoCo model (no physics, no task objects):

- observation: joint positions -> forward kinematics -> the VLA's 9-d proprio; a VLA trained with
  `obs_mode=state` also reads the task's object features, computed from the pose estimator's object
  poses (`obs["objects"]`) and the FK hand position by the task's own `features_from_poses`, so the
  robot's state is built by the same code as the simulator's;
- chunk: each EE delta goes through the same damped-least-squares IK step as the simulator
  (`sim.tasks.native.base.dls_joint_targets`), taken at the pose the arm is *predicted* to have
  when that target is sent: a dynamics copy of the arm (its position servos, no task objects) is
  stepped under the previous targets, from the measured joints and joint velocities (at rest when
  the robot reports none), after running the command the executor sent with the observation and
  replaying the committed prefix. The simulator applies each EE delta at the measured pose, and the arm lags its
  targets by most of a step; integrating the IK from the previous *target* instead (a stiff-arm
  assumption) sends targets that run ahead of the arm, and took the pick_place policy from 65% in
  simulation to 0/40 (`benchmarks/results/deploy.md`);
- prefix (executor `aligned` mode): the committed joint targets go back to the VLA as the EE deltas
  this adapter made them from (remembered per issued row; FK differences for rows it did not
  issue), so the VLA's prefix conditioning (training-time RTC) sees its own action space;
- guidance (executor `rtc` mode): the joint-space hook is wrapped so it acts on EE-delta chunks.

The gripper joint is the per-finger opening in metres (0 closed .. FINGER_MAX open), the target the
simulator's finger servos get for a gripper command.

Deploy YAML: `policy: {factory: "real.joint_vla:make_joint_vla", path: <checkpoint or onnx folder>,
backend: onnx}`.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from vla.interfaces import GuidanceFn, Observation, Policy
from vla.robot.arm import (
    ARM_JOINTS,
    CONTROL_DT,
    FINGER_MAX,
    POS_SCALE,
    PROPRIO_DIM,
    ROT_SCALE,
    build_model,
    dls_joint_targets,
    gripper_target,
)
from vla.robot.objects import object_feature_count

JOINT_NAMES = (*ARM_JOINTS, "gripper")
N_JOINTS = len(JOINT_NAMES)  # 8
EE_DIM = 7
QUAT_AT = 3  # the proprio's quaternion: state[3:7] (eef pos 3, quat xyzw 4, fingers 2)
BACKENDS = ("onnx", "torch")
LIMIT_MARGIN = 1e-5  # targets stay this far inside the joint ranges (rad / m)


class ArmKinematics:
    """Forward kinematics and the simulator's IK step on a kinematic copy of the native arm."""

    def __init__(self) -> None:
        self.model = build_model("", "")
        self.data = mujoco.MjData(self.model)
        m = self.model
        self.arm_qadr = np.array([m.jnt_qposadr[m.joint(j).id] for j in ARM_JOINTS])
        self.arm_dadr = np.array([m.jnt_dofadr[m.joint(j).id] for j in ARM_JOINTS])
        self.arm_range = np.array([m.jnt_range[m.joint(j).id] for j in ARM_JOINTS])
        self.finger_qadr = np.array([m.jnt_qposadr[m.joint(j).id] for j in ("finger_l", "finger_r")])
        self.finger_dadr = np.array([m.jnt_dofadr[m.joint(j).id] for j in ("finger_l", "finger_r")])
        self.site = m.site("grip").id
        self._jacp = np.zeros((3, m.nv))
        self._jacr = np.zeros((3, m.nv))
        self.dyn = mujoco.MjData(m)  # the dynamics copy for `rollout`
        self.n_substeps = round(CONTROL_DT / m.opt.timestep)

    @property
    def lower(self) -> np.ndarray:
        """Lower limits of the 8 joints (7 arm + gripper)."""
        return np.append(self.arm_range[:, 0], 0.0)

    @property
    def upper(self) -> np.ndarray:
        return np.append(self.arm_range[:, 1], FINGER_MAX)

    def _set(self, q_arm: np.ndarray, finger: float = FINGER_MAX) -> None:
        self.data.qpos[self.arm_qadr] = q_arm
        self.data.qpos[self.finger_qadr] = finger
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)  # the Jacobian needs it

    def pose(self, q_arm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(grip-site position float[3], rotation matrix float[3, 3]) for arm joints `q_arm`."""
        self._set(np.asarray(q_arm, dtype=np.float64))
        return self.data.site_xpos[self.site].copy(), self.data.site_xmat[self.site].reshape(3, 3).copy()

    def proprio(self, joints: np.ndarray) -> np.ndarray:
        """8 joint positions -> the VLA's state (eef pos, eef quat xyzw with w >= 0, fingers)."""
        joints = check_joints(joints, "joint state")
        pos, mat = self.pose(joints[:7])
        q = np.empty(4)
        mujoco.mju_mat2Quat(q, mat.ravel())
        if q[0] < 0:
            q = -q
        g = joints[7]
        # As NativeArmEnv._proprio: [finger_l, -finger_r]; the bridge reports one symmetric opening.
        return np.concatenate([pos, [q[1], q[2], q[3], q[0]], [g, -g]])

    def ee_to_joints(self, q_arm: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """EE-delta actions [N, 7] from arm joints `q_arm` -> absolute joint targets [N, 8].

        Step i runs the simulator's IK at the previous target (a position-controlled arm reaches it).
        """
        a = check_ee_actions(actions)
        q = np.asarray(q_arm, dtype=np.float64).copy()
        out = np.empty((len(a), N_JOINTS))
        for i, ai in enumerate(a):
            self._set(q)
            q = dls_joint_targets(self.model, self.data, self.site, self.arm_qadr, self.arm_dadr, self.arm_range,
                                  ai, self._jacp, self._jacr)
            out[i, :7] = q
            out[i, 7] = gripper_target(ai[6])
        return out

    def rollout(self, joints: np.ndarray, actions: np.ndarray, prefix: np.ndarray | None = None,
                velocity: np.ndarray | None = None, command: np.ndarray | None = None) -> np.ndarray:
        """EE-delta actions [N, 7] -> joint targets [N, 8], each IK step at the arm's predicted
        pose (see the module docstring). `joints` (8) are the measured joints; `velocity` (8) the
        measured joint velocities (None: at rest, the servos holding `joints`); `command` (8) a
        target the arm runs for one control period first (the executor's current command);
        `prefix` [P, 8]: targets already committed, executed next."""
        q = check_joints(joints, "joint state")
        m, d = self.model, self.dyn
        mujoco.mj_resetData(m, d)
        d.qpos[self.arm_qadr], d.qpos[self.finger_qadr] = q[:7], q[7]
        if velocity is not None:
            v = check_joints(velocity, "joint velocity")
            d.qvel[self.arm_dadr], d.qvel[self.finger_dadr] = v[:7], v[7]
        d.ctrl[:7], d.ctrl[7:9] = q[:7], q[7]
        rows = [] if command is None else [check_joints(command, "command")]
        rows += [] if prefix is None else list(np.asarray(prefix, dtype=np.float64))
        for row in rows:
            d.ctrl[:7], d.ctrl[7:9] = row[:7], row[7]
            mujoco.mj_step(m, d, nstep=self.n_substeps)
        return self.continue_rollout(actions)

    def continue_rollout(self, actions: np.ndarray) -> np.ndarray:
        """`rollout`'s planning loop from the dynamics copy's current state (`self.dyn`, which a
        caller that knows the arm's true velocities and servo targets may set itself)."""
        a = check_ee_actions(actions)
        m, d = self.model, self.dyn
        out = np.empty((len(a), N_JOINTS))
        for i, ai in enumerate(a):
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            out[i, :7] = dls_joint_targets(m, d, self.site, self.arm_qadr, self.arm_dadr, self.arm_range, ai,
                                           self._jacp, self._jacr)
            out[i, 7] = gripper_target(ai[6])
            d.ctrl[:7], d.ctrl[7:9] = out[i, :7], out[i, 7]
            mujoco.mj_step(m, d, nstep=self.n_substeps)
        return out

    def joints_to_ee(self, q_arm: np.ndarray, joints: np.ndarray) -> np.ndarray:
        """Joint targets [N, 8] reached one after the other from `q_arm` -> EE deltas [N, 7] (FK
        differences: position / POS_SCALE, world-frame rotation vector / ROT_SCALE, gripper command),
        clipped to [-1, 1] like every action the VLA was trained on."""
        j = np.asarray(joints, dtype=np.float64)
        if j.ndim != 2 or j.shape[1] != N_JOINTS:
            raise ValueError(f"joint targets must have shape (N, {N_JOINTS}), got {j.shape}")
        pos, mat = self.pose(q_arm)
        out = np.empty((len(j), EE_DIM))
        quat, rotvec = np.empty(4), np.empty(3)
        for i, ji in enumerate(j):
            p2, m2 = self.pose(ji[:7])
            mujoco.mju_mat2Quat(quat, (m2 @ mat.T).ravel())
            mujoco.mju_quat2Vel(rotvec, quat, 1.0)
            out[i, :3] = (p2 - pos) / POS_SCALE
            out[i, 3:6] = rotvec / ROT_SCALE
            out[i, 6] = 1.0 - 2.0 * ji[7] / FINGER_MAX
            pos, mat = p2, m2
        return np.clip(out, -1.0, 1.0)


def check_ee_actions(actions: np.ndarray) -> np.ndarray:
    """EE-delta actions [N, 7] as float64, clipped to [-1, 1] like every action the VLA was trained on."""
    a = np.clip(np.asarray(actions, dtype=np.float64), -1.0, 1.0)
    if a.ndim != 2 or a.shape[1] != EE_DIM:
        raise ValueError(f"EE-delta actions must have shape (N, {EE_DIM}), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("EE-delta actions contain NaN or inf")
    return a


def check_joints(joints: np.ndarray, what: str) -> np.ndarray:
    q = np.asarray(joints, dtype=np.float64)
    if q.shape != (N_JOINTS,):
        raise ValueError(f"{what} must have {N_JOINTS} values ({', '.join(JOINT_NAMES)}), got shape {q.shape}")
    if not np.all(np.isfinite(q)):
        raise ValueError(f"{what} has non-finite values: {q}")
    return q


class JointSpaceVLA:
    """`Policy` over joint positions around an EE-delta `Policy` (torch or ONNX VLA)."""

    def __init__(self, vla: Policy, kinematics: ArmKinematics | None = None, delay_s: float = 0.0,
                 objects_task: str = "") -> None:
        """`objects_task`: a native task whose object features (from `obs["objects"]`) follow the
        proprioception in the VLA's state; "" for a VLA that reads proprioception and cameras only."""
        self.vla = vla
        self.kin = kinematics or ArmKinematics()
        self.objects_task = objects_task
        self._features = None
        self.n_object_poses = 0
        if objects_task:
            from vla.robot.objects import pose_features

            names, self._features = pose_features(objects_task)
            self.n_object_poses = len(names)
        if delay_s < 0:
            raise ValueError(f"delay_s must be >= 0, got {delay_s}")
        self.delay_s = delay_s  # injected extra inference time, added to the real one (benchmarks)
        self._issued: dict[bytes, np.ndarray] = {}  # float32 joint row -> the EE action it came from

    def reset(self) -> None:
        self.vla.reset()
        self._issued.clear()

    def _prefix_to_ee(self, q_arm: np.ndarray, prefix: np.ndarray) -> np.ndarray:
        """Committed joint targets [P, 8] -> the EE deltas they were made from (FK differences for
        rows this adapter did not issue)."""
        rows = [self._issued.get(np.asarray(r, np.float32).tobytes()) for r in prefix]
        if all(r is not None for r in rows):
            return np.stack(rows)
        approx = self.kin.joints_to_ee(q_arm, prefix)  # FK differences chain through every row
        return np.stack([approx[i] if r is None else r for i, r in enumerate(rows)])

    def _state(self, obs: Observation, joints: np.ndarray, i: int) -> np.ndarray:
        """The VLA's state for measured `joints`: FK proprioception, then the object features."""
        proprio = self.kin.proprio(joints)
        if self._features is None:
            return proprio.astype(np.float32)
        poses = obs.get("objects")
        if poses is None:
            raise ValueError(f"observation {i} has no object poses: this VLA reads the '{self.objects_task}' "
                             "objects (the deploy config's objects section)")
        poses = np.asarray(poses, dtype=np.float64)
        if poses.shape != (self.n_object_poses, 7) or not np.all(np.isfinite(poses)):
            raise ValueError(f"observation {i}: object poses must be {self.n_object_poses} finite rows of 7 "
                             f"(position, quaternion xyzw), got shape {poses.shape}")
        features = self._features(poses, proprio[:3])
        return np.concatenate([proprio, features]).astype(np.float32)

    def sample_chunk(self, obs_batch: Sequence[Observation], prefix: np.ndarray | None = None,
                     guidance: GuidanceFn | None = None) -> np.ndarray:
        """Joint-target chunk [B, H, 8], or [B, H - 1, 8] when the observations carry the executor's
        current `command` and a prefix is given: the command then leads the VLA's prefix (it runs
        right after the observation, as the simulator's first action does), and the VLA's row for
        it is not returned (the chunk still starts at the tick after the observation)."""
        if len(obs_batch) == 0:
            raise ValueError("obs_batch is empty")
        states = [check_joints(o["state"], f"observation {i} state") for i, o in enumerate(obs_batch)]
        velocities = self._optional(obs_batch, "velocity")
        commands = self._optional(obs_batch, "command")
        q0 = [s[:7] for s in states]
        ee_obs = [{**o, "state": self._state(o, s, i)} for i, (o, s) in enumerate(zip(obs_batch, states, strict=True))]
        ee_prefix = None
        lead = 0
        if prefix is not None:
            prefix = np.asarray(prefix, dtype=np.float64)
            if prefix.ndim != 3 or prefix.shape[0] != len(obs_batch) or prefix.shape[2] != N_JOINTS:
                raise ValueError(f"prefix must have shape ({len(obs_batch)}, P, {N_JOINTS}), got {prefix.shape}")
            if not np.all(np.isfinite(prefix)):
                raise ValueError("prefix has non-finite values")
            lead = int(commands[0] is not None)
            rows = [p if c is None else np.concatenate([c[None], p]) for c, p in zip(commands, prefix, strict=True)]
            ee_prefix = np.stack([self._prefix_to_ee(q, r) for q, r in zip(q0, rows, strict=True)])
            ee_prefix = ee_prefix.astype(np.float32)
        ee_guidance = None if guidance is None else self._wrap_guidance(guidance, states, velocities, commands, lead)
        chunk_ee = np.clip(np.asarray(self.vla.sample_chunk(ee_obs, prefix=ee_prefix, guidance=ee_guidance)),
                           -1.0, 1.0)[:, lead:]
        out = np.empty((len(obs_batch), chunk_ee.shape[1], N_JOINTS))
        for b, (s, v, c) in enumerate(zip(states, velocities, commands, strict=True)):
            if prefix is None:
                out[b] = self.kin.rollout(s, chunk_ee[b], velocity=v, command=c)
            else:  # the committed prefix stays exact; the rest continues from where it leaves the arm
                p = prefix.shape[1]
                out[b, :p] = prefix[b]
                out[b, p:] = self.kin.rollout(s, chunk_ee[b, p:], prefix=prefix[b], velocity=v, command=c)
        # Inside the joint ranges *after* the float32 cast (a target clipped to exactly a limit can
        # round past it, and the safety layer rejects anything outside).
        out = np.clip(out, self.kin.lower + LIMIT_MARGIN, self.kin.upper - LIMIT_MARGIN).astype(np.float32)
        if len(self._issued) > 8 * out.shape[1]:  # only the latest chunks can come back as a prefix
            self._issued.clear()
        for b in range(len(out)):
            for row, ee in zip(out[b], chunk_ee[b], strict=True):
                self._issued[row.tobytes()] = ee.astype(np.float32)
        if self.delay_s > 0:  # on top of the real inference time
            time.sleep(self.delay_s)
        return out

    @staticmethod
    def _optional(obs_batch: Sequence[Observation], key: str) -> list[np.ndarray | None]:
        """Per-observation optional joint vector (`velocity`, `command`): all or none of the batch."""
        have = [key in o for o in obs_batch]
        if any(have) and not all(have):
            raise ValueError(f"observations must all carry {key!r} or none: {have}")
        return [check_joints(o[key], f"observation {i} {key}") if h else None
                for i, (o, h) in enumerate(zip(obs_batch, have, strict=True))]

    def _wrap_guidance(self, guidance: GuidanceFn, states: list[np.ndarray], velocities: list[np.ndarray | None],
                       commands: list[np.ndarray | None], lead: int) -> GuidanceFn:
        """Joint-space hook -> EE-space hook: estimate -> joints (the same rollout the chunk gets,
        without the `lead` row of the current command), ask the hook, and map its joint correction
        back to EE deltas as the difference of two FK mappings (so their common linearisation
        error cancels)."""

        def ee_guidance(estimate: np.ndarray, tau: float) -> np.ndarray:
            est = np.asarray(estimate, dtype=np.float64)[:, lead:]
            joints = np.stack([self.kin.rollout(s, e, velocity=v, command=c)
                               for s, e, v, c in zip(states, est, velocities, commands, strict=True)])
            wanted = joints + np.asarray(guidance(joints, tau), dtype=np.float64)
            wanted[..., 7] = np.clip(wanted[..., 7], 0.0, FINGER_MAX)
            delta = np.zeros(np.shape(estimate), dtype=np.float32)
            for b, (s, w, j) in enumerate(zip(states, wanted, joints, strict=True)):
                delta[b, lead:] = self.kin.joints_to_ee(s[:7], w) - self.kin.joints_to_ee(s[:7], j)
            return delta

        return ee_guidance


def resolve_policy_folder(path: str | Path, backend: str) -> Path:
    """The folder to load for `backend`: an ONNX export (has runtime.json; a checkpoint's `onnx/`
    sub-folder is found too) or a torch checkpoint folder."""
    from vla.policy.specs import ONNX_META

    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"policy folder not found: {folder}")
    if backend == "onnx":
        for cand in (folder, folder / "onnx"):
            if (cand / ONNX_META).is_file():
                return cand
        raise FileNotFoundError(f"backend onnx: no ONNX export ({ONNX_META}) in {folder} or {folder / 'onnx'}; "
                                "run the export stage or use backend: torch")
    if (folder / ONNX_META).is_file():
        raise ValueError(f"backend torch: {folder} is an ONNX export; give the checkpoint folder or backend: onnx")
    return folder


def make_joint_vla(path: str, dt: float, action_dim: int, backend: str = "onnx", seed: int = 0,
                   delay_s: float = 0.0, select: int = 1, select_by: str = "coherence", select_cfn: str = "",
                   instruction_vocab: str = "", instruction_vocab_margin: float = 0.05, objects_task: str = "",
                   **unknown: Any) -> JointSpaceVLA:
    """Policy factory for `real.config.make_policy` (`{factory: "real.joint_vla:make_joint_vla", ...}`).
    `select: N` > 1 samples N chunks in one batched call and runs the best by `select_by` (coherence |
    cfn | both; cfn needs `select_cfn`, a folder from `real.selection.save_cfn`): real/selection.py.
    `instruction_vocab`: "checkpoint" (the training phrasings the checkpoint carries), their aliases file
    or another checkpoint's folder; an instruction from the topic that the policy never saw is grounded
    on the nearest of them when unambiguous (vla.policy.grounding). `objects_task`: the native task
    whose object features a VLA trained with `obs_mode=state` reads after its proprioception (the
    node then needs the deploy config's `objects` section)."""
    from vla.policy.specs import load_spec

    if unknown:
        raise ValueError(f"make_joint_vla: unknown policy keys {sorted(unknown)} (known: path, backend, seed, "
                         "delay_s, select, select_by, select_cfn, instruction_vocab, instruction_vocab_margin, "
                         "objects_task)")
    if action_dim != N_JOINTS:
        raise ValueError(f"the joint-space VLA commands {N_JOINTS} joints ({', '.join(JOINT_NAMES)}); "
                         f"the deploy config's limits name {action_dim}")
    if abs(dt - CONTROL_DT) > 1e-9:
        raise ValueError(f"the VLA's EE deltas are per {CONTROL_DT} s control step (20 Hz); executor.rate_hz "
                         f"gives dt = {dt}")
    folder = resolve_policy_folder(path, backend)
    vla = load_spec(str(folder), seed=seed)  # OnnxPolicy or the torch policy by the folder's content
    if instruction_vocab:
        from vla.policy.grounding import attach

        attach(vla, instruction_vocab, instruction_vocab_margin)
    cfg = vla.cfg
    want = PROPRIO_DIM + (object_feature_count(objects_task) if objects_task else 0)
    if cfg.action_dim != EE_DIM or cfg.state_dim != want:
        what = (f"{PROPRIO_DIM} of proprioception and the '{objects_task}' object features ({want})" if objects_task
                else f"{PROPRIO_DIM} of proprioception")
        hint = ("; a state with more is a VLA trained with obs_mode=state: set policy.objects_task to its task, "
                "with an objects section" if cfg.state_dim > PROPRIO_DIM and not objects_task else "")
        raise ValueError(f"{folder}: the adapter needs a VLA with state_dim {want} ({what}) and action_dim {EE_DIM}, "
                         f"this one has {cfg.state_dim} / {cfg.action_dim}{hint}")
    if QUAT_AT not in tuple(getattr(cfg, "state_quats", ())):
        # The adapter computes the state's quaternion (w >= 0) from the measured joints; a downward
        # gripper sits where that sign flips, so an arm that sagged before its first command shows
        # such a policy a start it never saw (1/10 episodes over ROS against 6/10 with the sign pinned).
        warnings.warn(f"{folder}: this VLA reads the end-effector quaternion raw (no policy.state_quats), and its "
                      "sign flips near a downward-pointing gripper; retrain it (vla train detects the quaternion "
                      "and feeds its 6D rotation features) before running it on an arm", RuntimeWarning, stacklevel=2)
    if select > 1:
        from real.selection import ChunkSelection, load_cfn

        cfn, length = load_cfn(select_cfn) if select_cfn else (None, 8)
        vla = ChunkSelection(vla, n=int(select), by=select_by, cfn=cfn, cfn_length=length)
    return JointSpaceVLA(vla, delay_s=delay_s, objects_task=objects_task)
