"""A lean control step for robosuite's Panda + BASIC (OSC_POSE + gripper) envs: same dynamics,
~3x less Python.

robosuite's `env.step` runs, at each of the 25 physics substeps of a 20 Hz control step, the whole
composite-controller stack in Python (`robot.control` -> `update_state` twice -> OSC `update` with
four site-Jacobian calls by name -> `opspace_matrices` -> clipping), then updates every observable.
That costs ~7 ms per control step against ~1 ms of `mj_step`, and sets the floor under a control
step with cameras once rendering is cheap.

`LeanStepper.step` keeps robosuite in charge of everything that happens once per control step
(goal setting from the action, the robot's proprio history, reward, success, observations) by
calling robosuite's own `_pre_action` on the first substep. On the other 24 substeps it recomputes
the arm's OSC torques with the same formulas, the same (numba-compiled) robosuite helpers
`nullspace_torques` and `orientation_error`, and robosuite's `opspace_matrices` with `inv` in place
of `pinv` for the positive-definite operational-space inertias (equal up to rounding, ~3x faster;
`pinv` is kept for a singular matrix), on the same inputs, and writes the same clipped `ctrl`.
Skipped on those substeps, because they do not change what is computed:

- the gripper controller: its command depends only on the goal set at the policy step, so its
  `ctrl` is the same on every substep;
- per-substep observable updates: robosuite samples observables at 20 Hz, and the values it
  returns after a step equal a fresh read of the final state; we read them once, forced, at the
  end (tests/sim/tasks/test_robosuite_lean.py checks observations and torques against robosuite).

So the physics is robosuite's up to floating-point rounding of the arm torques (~1e-12 relative).
`supported(env)` says whether an env has the one configuration this was written for; otherwise
callers keep robosuite's `env.step`.
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("MUJOCO_GL", "osmesa")  # before mujoco/robosuite pick a GL backend

import mujoco
import numba
import numpy as np
from robosuite.controllers.parts.arm.osc import OperationalSpaceController
from robosuite.utils.control_utils import nullspace_torques, orientation_error


def supported(env: Any) -> bool:
    """True for the configuration the lean step reproduces exactly (see the module docstring)."""
    if not (getattr(env, "lite_physics", False) and getattr(env, "ignore_done", False)) \
            or len(getattr(env, "robots", ())) != 1:
        return False
    robot = env.robots[0]
    parts = robot.composite_controller.part_controllers
    if set(parts) != {"right", "right_gripper"}:
        return False
    arm, grip = parts["right"], parts["right_gripper"]
    return (isinstance(arm, OperationalSpaceController) and arm.interpolator_pos is None
            and arm.interpolator_ori is None and arm.input_ref_frame == "base" and arm.uncoupling
            and arm.num_ref_sites == 1 and getattr(grip, "interpolator", None) is None)


class LeanStepper:
    """Steps one robosuite env like `env.step(action)`; build a new one after each hard reset."""

    def __init__(self, env: Any) -> None:
        if not supported(env):
            raise ValueError("LeanStepper needs one robot with robosuite's BASIC OSC_POSE controller")
        self.env = env
        self.model = env.sim.model._model
        self.data = env.sim.data._data
        robot = env.robots[0]
        self.arm: OperationalSpaceController = robot.composite_controller.part_controllers["right"]
        self.substeps = int(env.control_timestep / env.model_timestep)
        m = self.model
        self._eef = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, self.arm.ref_name)
        self._center = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, f"{self.arm.naming_prefix}right_center")
        # A site on a body welded to the world has a zero Jacobian, hence zero velocity: skip it.
        self._center_moves = int(m.body_weldid[m.site_bodyid[self._center]]) != 0
        self._qpos = np.asarray(self.arm.qpos_index)
        self._qvel = np.asarray(self.arm.qvel_index)
        self._act = np.asarray(robot._ref_actuators_indexes_dict["right"])
        self._lo = m.actuator_ctrlrange[self._act, 0].copy()
        self._hi = m.actuator_ctrlrange[self._act, 1].copy()
        self._jacp = np.zeros((3, m.nv))
        self._jacr = np.zeros((3, m.nv))
        self._full = np.zeros((m.nv, m.nv))
        self._zero3 = np.zeros(3)
        self._act = self._act.astype(np.int64)
        self._qpos = self._qpos.astype(np.int64)
        self._qvel = self._qvel.astype(np.int64)

    def step(self, action: np.ndarray) -> tuple[dict[str, Any], float]:
        """One control step: (robosuite's observation dict, reward). `ignore_done` envs only."""
        env, m, d = self.env, self.model, self.data
        # robosuite builds new controller objects at every reset: look the arm's up each step.
        self.arm = env.robots[0].composite_controller.part_controllers["right"]
        env.timestep += 1
        for i in range(self.substeps):
            mujoco.mj_step1(m, d)
            if i == 0:
                env._pre_action(action, policy_step=True)  # goal, gripper, history: robosuite's own
            else:
                self._arm_ctrl()
            mujoco.mj_step2(m, d)
        env.cur_time += env.control_timestep
        reward, _, _ = env._post_action(action)
        return env._get_observations(force_update=True), float(reward)

    def _arm_ctrl(self) -> None:
        """robosuite's OperationalSpaceController.run_controller (delta, base frame, uncoupled)."""
        m, d, c = self.model, self.data, self.arm
        if self._center_moves:
            mujoco.mj_jacSite(m, d, self._jacp, self._jacr, self._center)
            base_pos_vel, base_ori_vel = self._jacp @ d.qvel, self._jacr @ d.qvel
        else:
            base_pos_vel = base_ori_vel = self._zero3
        mujoco.mj_jacSite(m, d, self._jacp, self._jacr, self._eef)
        mujoco.mj_fullM(m, self._full, d.qM)
        _osc_ctrl(d.site_xpos, d.site_xmat, self._center, self._eef, self._jacp, self._jacr, d.qpos, d.qvel,
                  self._qpos, self._qvel, self._full, d.qfrc_bias, c.goal_pos, c.goal_ori, c.kp, c.kd,
                  c.initial_joint, base_pos_vel, base_ori_vel, self._lo, self._hi, self._act, d.ctrl)


def _compiled(f: Any) -> Any:
    """robosuite's helper as a numba function (robosuite compiles it unless macros.ENABLE_NUMBA is off)."""
    return f if isinstance(f, numba.core.registry.CPUDispatcher) else numba.njit(cache=True)(f)


_nullspace_torques = _compiled(nullspace_torques)
_orientation_error = _compiled(orientation_error)


@numba.njit(cache=True)
def _inv(a: np.ndarray) -> np.ndarray:
    """inv for the symmetric positive-definite operational-space matrices, where robosuite's
    pinv (SVD, rcond 1e-15) gives the same result up to rounding at a third of the cost; pinv if
    the matrix is singular."""
    try:
        return np.linalg.inv(a)
    except Exception:  # numba raises a bare LinAlgError for a singular matrix
        return np.linalg.pinv(a)


@numba.njit(cache=True)
def _opspace_matrices(mass: np.ndarray, j_full: np.ndarray, j_pos: np.ndarray, j_ori: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """robosuite.utils.control_utils.opspace_matrices (lambda_pos, lambda_ori, nullspace)."""
    mass_inv = np.linalg.inv(mass)
    lambda_full = _inv(np.dot(np.dot(j_full, mass_inv), j_full.T.copy()))
    lambda_pos = _inv(np.dot(np.dot(j_pos, mass_inv), j_pos.T.copy()))
    lambda_ori = _inv(np.dot(np.dot(j_ori, mass_inv), j_ori.T.copy()))
    jbar = np.dot(np.dot(mass_inv, j_full.T.copy()), lambda_full)
    nullspace = np.eye(j_full.shape[1]) - np.dot(jbar, j_full)
    return lambda_pos, lambda_ori, nullspace


@numba.njit(cache=True)
def _osc_ctrl(site_xpos: np.ndarray, site_xmat: np.ndarray, center: int, eef: int, jacp: np.ndarray,
              jacr: np.ndarray, qpos: np.ndarray, qvel: np.ndarray, qpos_index: np.ndarray,
              qvel_index: np.ndarray, full_mass: np.ndarray, qfrc_bias: np.ndarray, goal_pos: np.ndarray,
              goal_ori: np.ndarray, kp: np.ndarray, kd: np.ndarray, initial_joint: np.ndarray,
              base_pos_vel: np.ndarray, base_ori_vel: np.ndarray, lo: np.ndarray, hi: np.ndarray,
              act: np.ndarray, ctrl: np.ndarray) -> None:
    """The body of robosuite's OSC run_controller + robot.control clipping, in one compiled call
    (a Python version costs ~100 us per substep, mostly call overhead on 3x3 arrays)."""
    origin_pos = site_xpos[center].copy()
    origin_ori = site_xmat[center].copy().reshape(3, 3)
    ref_pos = site_xpos[eef].copy()
    ref_ori = site_xmat[eef].copy().reshape(3, 3)
    ref_pos_vel = np.dot(jacp, qvel)
    ref_ori_vel = np.dot(jacr, qvel)
    j_pos = np.ascontiguousarray(jacp[:, qvel_index])
    j_ori = np.ascontiguousarray(jacr[:, qvel_index])
    j_full = np.vstack((j_pos, j_ori))
    joint_pos = qpos[qpos_index]
    joint_vel = qvel[qvel_index]
    mass = np.ascontiguousarray(full_mass[qvel_index][:, qvel_index])

    desired_pos = origin_pos + np.dot(origin_ori, goal_pos)
    ori_error = _orientation_error(np.dot(origin_ori, goal_ori), ref_ori)
    force = (desired_pos - ref_pos) * kp[0:3] + (-(ref_pos_vel - base_pos_vel)) * kd[0:3]
    torque = ori_error * kp[3:6] + (-(ref_ori_vel - base_ori_vel)) * kd[3:6]
    lambda_pos, lambda_ori, nullspace = _opspace_matrices(mass, j_full, j_pos, j_ori)
    wrench = np.concatenate((np.dot(lambda_pos, force), np.dot(lambda_ori, torque)))
    torques = np.dot(j_full.T.copy(), wrench) + qfrc_bias[qvel_index]
    torques += _nullspace_torques(mass, nullspace, initial_joint, joint_pos, joint_vel, 10.0)
    for i in range(act.shape[0]):
        ctrl[act[i]] = min(max(torques[i], lo[i]), hi[i])
