"""The native arm (our own 7-DoF MJCF with a parallel gripper) and its control convention, shared by
the simulator's tasks (sim/tasks/native/) and the joint-space adapter that drives a real arm
(real/joint_vla.py), so both turn an EE delta into exactly the same joint targets.

Control follows robosuite's OSC_POSE delta convention, 20 Hz: action float32[7] in [-1, 1] =
end-effector delta position (x POS_SCALE m), delta rotation axis-angle in the world frame
(x ROT_SCALE rad), gripper (-1 open, +1 close). The pose delta becomes joint targets by one
damped-least-squares step on the site Jacobian, with a null-space pull to the home posture, which
keeps the redundant seventh joint from drifting.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from vla.robot.rotations import rotvec

ASSET = Path(__file__).resolve().parent / "assets" / "native_arm.xml"
ARM_JOINTS = ("j1", "j2", "j3", "j4", "j5", "j6", "j7")
# Elbow up, gripper pointing down over the table centre.
HOME_QPOS = np.array([0.0, 0.1, 0.0, 1.9, 0.0, np.pi - 2.0, 0.0])
POS_SCALE, ROT_SCALE = 0.05, 0.5
# the arm's reach: a hand error of x metres is about x / ARM_REACH_M radians at its joints (how vla.perturb's
# millimetre severities map to joint space on a position-controlled arm)
ARM_REACH_M = 0.8
JOINT_UNIT_RAD = POS_SCALE / ARM_REACH_M  # the joint motion one unit of the hand's position action makes
FINGER_MAX = 0.045
CONTROL_DT = 0.05
# End-effector goals are clamped to this box (world frame, table top at z = 0).
WORKSPACE_LO = np.array([-0.35, -0.45, 0.005])
WORKSPACE_HI = np.array([0.40, 0.45, 0.55])
PROPRIO_DIM = 9
_DAMPING = (0.03**2) * np.eye(6)
_EYE7 = np.eye(7)


def gripper_target(command: float) -> float:
    """Finger position target (m, per finger) for a gripper command in [-1 open, +1 close]."""
    return FINGER_MAX * (1.0 - command) / 2.0


def dls_joint_targets(m: mujoco.MjModel, d: mujoco.MjData, site: int, arm_qadr: np.ndarray,
                      arm_dadr: np.ndarray, arm_range: np.ndarray, a: np.ndarray,
                      jacp: np.ndarray | None = None, jacr: np.ndarray | None = None) -> np.ndarray:
    """Arm joint-position targets for the EE-delta action `a` (clipped to [-1, 1] by the caller) at
    the pose in `d` (site poses and Jacobian must be current: mj_kinematics + mj_comPos).

    One function for the env's `_apply_action` and the joint-space deployment adapter
    (`real.joint_vla`), so both turn an EE delta into exactly the same joint targets.
    """
    pos = d.site_xpos[site]
    goal = np.clip(pos + a[:3] * POS_SCALE, WORKSPACE_LO, WORKSPACE_HI)
    err = np.concatenate([goal - pos, a[3:6] * ROT_SCALE])
    jacp = np.zeros((3, m.nv)) if jacp is None else jacp
    jacr = np.zeros((3, m.nv)) if jacr is None else jacr
    mujoco.mj_jacSite(m, d, jacp, jacr, site)
    jac = np.vstack([jacp[:, arm_dadr], jacr[:, arm_dadr]])
    # Damped pseudo-inverse J^T (J J^T + l^2 I)^-1, as solve(...).T since J J^T is symmetric.
    jpinv = np.linalg.solve(jac @ jac.T + _DAMPING, jac).T
    q = d.qpos[arm_qadr]
    dq = jpinv @ err + (_EYE7 - jpinv @ jac) @ (0.2 * (HOME_QPOS - q))
    return np.clip(q + dq, arm_range[:, 0], arm_range[:, 1])


def build_model(bodies: str, sites: str = "") -> mujoco.MjModel:
    xml = ASSET.read_text()
    xml = xml.replace("<!-- TASK_BODIES -->", bodies).replace("<!-- TASK_SITES -->", sites)
    return mujoco.MjModel.from_xml_string(xml)


def rewind_step(waypoints: list[tuple[np.ndarray, np.ndarray]], eef_pos: np.ndarray, eef_mat: np.ndarray,
                gripper: float) -> np.ndarray | None:
    """One EE-delta action back along a recorded path, or None once its last waypoint is reached.

    `waypoints` are (position, rotation matrix), the next target first (the recorded path
    reversed); reached ones are popped from the list, so successive calls walk the path and a
    caller can stop and resume a rewind. Shared by the scripted intervener and a person's
    on-demand rewind (real.session.HumanIntervener) so both drive back the same way.
    """
    # Skip waypoints already within one step's reach, so the rewind runs at full speed.
    while len(waypoints) > 1 and np.linalg.norm(waypoints[0][0] - eef_pos) < 0.6 * POS_SCALE:
        waypoints.pop(0)
    if not waypoints:
        return None
    pos, mat = waypoints[0]
    if len(waypoints) == 1 and np.linalg.norm(pos - eef_pos) < 0.01:
        waypoints.pop(0)
        return None
    dpos = np.clip((pos - eef_pos) / POS_SCALE * 1.5, -1.0, 1.0)
    drot = np.clip(rotvec(mat @ np.asarray(eef_mat).T) / ROT_SCALE * 1.5, -1.0, 1.0)
    return np.concatenate([dpos, drot, [gripper]]).astype(np.float32)
