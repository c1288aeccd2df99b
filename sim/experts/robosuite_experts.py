"""Scripted experts for the robosuite tasks (sim/tasks/robosuite_tasks.py): state machines on the
env's privileged state that output OSC_POSE delta actions.

Each expert is reactive: its phase is re-derived from the simulator state every step (is the object
held? is the gripper over it? is it at the goal?), with only a short memory for the gripper
closing/opening timers. So it can take over from any reachable state, e.g. re-grasp after a drop.

`noise` adds Gaussian noise (std, in action units) to the arm part of every action. `skill` in
[0, 1] (1 = best) scales the speed, and lower skill adds hesitations (pauses) and sloppy grasps
(a lateral offset that often misses and forces a re-grasp): mixed-quality demos like robomimic's
multi-human sets.

Interface (what sim/intervener.py uses): `act(obs, info) -> (action float32[7], False)`,
`reset(seed)`, `sync()`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

POS_SCALE = 0.05  # OSC_POSE output_max for position (m per control step at action 1)
ROT_SCALE = 0.5  # OSC_POSE output_max for rotation (rad per control step at action 1)
OPEN, CLOSE = -1.0, 1.0
# Gripper pointing down with its fingers closing along world y: the Panda's pose after reset.
R_DOWN = np.diag([1.0, -1.0, -1.0])
CLOSE_STEPS = 8  # steps to let the fingers close before judging the grasp
OPEN_STEPS = 6


def _rz(yaw: float) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _wrap(angle: float, period: float) -> float:
    """Angle wrapped into [-period/2, period/2)."""
    return float((angle + period / 2) % period - period / 2)


def quat_yaw(q_xyzw: np.ndarray) -> float:
    return float(Rotation.from_quat(q_xyzw).as_euler("xyz")[2])


class RobosuiteExpert:
    """Shared control: move the end effector to a target position and yaw with a given grip."""

    task = ""
    grasp_symmetry = np.pi / 2  # the object looks the same after this yaw rotation
    xy_tolerance = 0.012  # how well the hand must be centred over the grasp point before descending

    def __init__(self, env: Any, noise: float = 0.0, skill: float = 1.0, seed: int | None = None) -> None:
        if not 0.0 <= skill <= 1.0:
            raise ValueError(f"skill must be in [0, 1], got {skill}")
        if noise < 0.0:
            raise ValueError(f"noise must be >= 0, got {noise}")
        self.env = env.unwrapped
        if getattr(self.env, "task", None) != self.task:
            raise ValueError(f"{type(self).__name__} drives the '{self.task}' task, "
                             f"got env for '{getattr(self.env, 'task', type(self.env).__name__)}'")
        self.noise, self.skill = float(noise), float(skill)
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)
        self._grip = OPEN
        self._timer = 0  # steps left in the current closing / opening
        self._pause = 0
        self._offset: np.ndarray | None = None  # sloppy-grasp offset of the current attempt
        self._yaw: float | None = None  # yaw target kept while the object is held
        self._stall, self._last_z = 0, np.inf
        self._hover_stall, self._last_xy = 0, np.inf
        self._retries, self._jitter = 0, np.zeros(3)
        # Plans may damp the noise in precision phases (a person slows down to fit a nut on a peg).
        self._noise_scale = 1.0
        self.clean_action: np.ndarray | None = None

    def sync(self) -> None:
        """Re-derive the gripper memory from the state before taking over from someone else."""
        held = bool(self.env.grasped())
        self._grip, self._timer, self._pause, self._offset = (CLOSE if held else OPEN), 0, 0, None
        self._yaw = None

    # --- control primitives -----------------------------------------------------------------------

    def _eef_mat(self) -> np.ndarray:
        return Rotation.from_quat(self.env.eef_quat()).as_matrix()

    def _eef_yaw(self) -> float:
        """Yaw of the gripper relative to R_DOWN."""
        m = self._eef_mat() @ R_DOWN.T
        return float(np.arctan2(m[1, 0], m[0, 0]))

    def _grasp_yaw(self, object_yaw: float) -> float:
        """The gripper yaw that aligns the fingers with the object, nearest to the current yaw."""
        current = self._eef_yaw()
        return current + _wrap(object_yaw - current, self.grasp_symmetry)

    def _move(self, target: np.ndarray, yaw: float, gain: float = 1.0) -> np.ndarray:
        speed = gain * (0.5 + 0.5 * self.skill)
        dpos = (target - self.env.eef_pos()) / POS_SCALE * speed
        norm = np.abs(dpos).max()
        if norm > 1.0:
            dpos /= norm  # keep the direction when saturating
        rot_err = Rotation.from_matrix(_rz(yaw) @ R_DOWN @ self._eef_mat().T).as_rotvec()
        drot = np.clip(rot_err / ROT_SCALE * 1.5, -1.0, 1.0)
        return np.concatenate([dpos, drot, [self._grip]])

    def _close(self) -> None:
        if self._grip != CLOSE:
            self._grip, self._timer = CLOSE, CLOSE_STEPS

    def _open(self) -> None:
        if self._grip != OPEN:
            self._grip, self._timer = OPEN, OPEN_STEPS

    def _sloppy_offset(self, yaw: float) -> np.ndarray:
        """Per grasp attempt: with probability growing as skill falls, aim beside the object."""
        if self._offset is None:
            miss = self._rng.random() < 0.5 * (1.0 - self.skill)
            side = self._rng.choice([-1.0, 1.0])
            # Along the fingers' closing axis: one finger lands on top of the object.
            self._offset = side * 0.03 * np.array([-np.sin(yaw), -np.cos(yaw), 0.0]) * miss
        return self._offset

    # --- the state machine --------------------------------------------------------------------------

    def plan(self) -> np.ndarray:
        raise NotImplementedError

    def _pick(self, grasp_pos: np.ndarray, object_yaw: float, depth: float = 0.0) -> np.ndarray | None:
        """Approach, descend and close on `grasp_pos`; None once the object is held (caller moves on)."""
        env = self.env
        if self._timer > 0:  # let the gripper finish closing / opening before re-planning
            self._timer -= 1
            return self._move(env.eef_pos(), self._yaw if self._yaw is not None else self._eef_yaw())
        held = bool(env.grasped())
        if held and self._grip == CLOSE:
            return None
        eef = env.eef_pos()
        if self._grip == CLOSE:  # closed on nothing (missed, or dropped): open and back off upwards
            self._offset = None
            self._yaw = None
            self._hover_stall, self._last_xy = 0, np.inf
            self._retries += 1
            # Each retry aims a few mm elsewhere, so a grasp that failed is not repeated exactly.
            self._jitter = np.append(self._rng.normal(0.0, 0.004, 2), 0.0)
            self._open()
            return self._move(eef + np.array([0.0, 0.0, 0.06]), self._eef_yaw())
        yaw = self._grasp_yaw(object_yaw)
        goal = grasp_pos + self._sloppy_offset(yaw) + self._jitter + np.array([0.0, 0.0, -depth])
        xy_err = np.linalg.norm(goal[:2] - eef[:2])
        yaw_err = abs(_wrap(yaw - self._eef_yaw(), 2 * np.pi))
        hover = goal + np.array([0.0, 0.0, 0.08])
        # At the edge of the workspace the arm cannot quite line up: go down anyway once close
        # and no longer improving.
        self._hover_stall = self._hover_stall + 1 if xy_err < 0.03 and self._last_xy - xy_err < 0.0005 else 0
        self._last_xy = float(xy_err)
        if (xy_err > self.xy_tolerance or yaw_err > 0.15) and self._hover_stall < 10:
            # Go over the object first; stay high while far so that the fingers do not knock it.
            target = hover.copy()
            if xy_err > 0.03:
                target[2] = max(hover[2], eef[2])
            return self._move(target, yaw)
        descending = eef[2] - goal[2] > 0.008
        # Also close when the descent stalls (fingers resting on the object or the floor).
        self._stall = self._stall + 1 if descending and self._last_z - eef[2] < 0.001 else 0
        self._last_z = float(eef[2])
        if descending and self._stall < 3:
            return self._move(goal, yaw)
        self._yaw = yaw
        self._close()
        return self._move(goal, yaw)

    def act(self, obs: Any = None, info: Any = None) -> tuple[np.ndarray, bool]:
        if self._pause > 0:
            self._pause -= 1
            action = np.zeros(7)
            action[6] = self._grip
        else:
            action = self.plan()
            if self._rng.random() < 0.04 * (1.0 - self.skill):
                self._pause = int(self._rng.integers(2, 12))
        self.clean_action = np.clip(action, -1.0, 1.0).astype(np.float32)  # the label of DART demos
        if self.noise > 0:
            action[:6] += self._rng.normal(0.0, self.noise * self._noise_scale, 6)
        return np.clip(action, -1.0, 1.0).astype(np.float32), False


class LiftExpert(RobosuiteExpert):
    task = "lift"

    def plan(self) -> np.ndarray:
        p = self.env.privileged()
        action = self._pick(p["object_pos"], quat_yaw(p["object_quat"]))
        if action is not None:
            return action
        target = p["object_pos"].copy()
        target[2] = p["table_height"] + 0.2
        return self._move(target, self._yaw if self._yaw is not None else self._eef_yaw())


class CanExpert(RobosuiteExpert):
    """PickPlaceCan: grasp the can from above, carry it high over the target bin, lower, release."""

    task = "can"
    grasp_symmetry = np.pi / 2  # a cylinder: any yaw works, stay near the current one
    xy_tolerance = 0.015  # 8 cm opening around a 6.6 cm can

    # Aim short of the quadrant's centre, towards the robot: the centre is at the edge of the
    # Panda's reach at carrying height. The success region is the quadrant (+-0.1 m x, +-0.12 m y).
    aim_offset = np.array([-0.035, -0.04, 0.0])
    carry_z = 0.19  # can centre above the bin floor: its bottom clears the 0.1 m walls
    release_z = 0.12

    def plan(self) -> np.ndarray:
        env = self.env
        p = env.privileged()
        can, target = p["object_pos"], p["target_pos"]
        aim = target + self.aim_offset
        eef = env.eef_pos()
        in_target_bin = not env.robosuite_env.not_in_bin(can, env.robosuite_env.object_id)
        if self._grip == OPEN and in_target_bin and not p["grasped"]:
            # Released in the bin: back away upwards (success needs the gripper away from the can).
            self._timer = max(self._timer - 1, 0)
            return self._move(np.array([eef[0], eef[1], target[2] + 0.3]), self._eef_yaw())
        # Grasp low on the can so that it hangs less far below the hand while carried.
        action = self._pick(can, quat_yaw(p["object_quat"]), depth=0.005)
        if action is not None:
            return action
        yaw = self._yaw if self._yaw is not None else self._eef_yaw()
        hand_to_can = can - eef
        xy_err = np.linalg.norm(aim[:2] - can[:2])
        if xy_err > 0.02:
            if can[2] < target[2] + self.carry_z - 0.03 and xy_err > 0.06:
                # Lift clear of the bin walls before moving sideways.
                return self._move(np.array([eef[0], eef[1], target[2] + self.carry_z - hand_to_can[2] + 0.01]), yaw)
            goal = aim - hand_to_can
            goal[2] = target[2] + self.carry_z - hand_to_can[2]
            return self._move(goal, yaw)
        if can[2] > target[2] + self.release_z:
            return self._move(aim - hand_to_can - np.array([0.0, 0.0, 0.04]), yaw)
        self._open()
        return self._move(eef, yaw)


class SquareExpert(RobosuiteExpert):
    """NutAssemblySquare: grasp the nut's handle across its width, carry the nut above the square
    peg, turn it so that its hole lines up with the peg (mod 90 degrees), lower it over the peg."""

    task = "square"
    grasp_symmetry = np.pi  # fingers across the handle: either way round
    peg_half_height = 0.1
    table_z = 0.82

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self._nut_goal_yaw: float | None = None
        self._xy_int = np.zeros(2)
        self._stuck, self._last_nut_z = 0, np.inf

    def sync(self) -> None:
        super().sync()
        self._nut_goal_yaw = None

    def _choose_nut_yaw(self, nut_yaw: float) -> float:
        """Of the four yaws that fit the peg, the nearest one with the handle (nut +x) not pointing
        away from the robot: the peg is near the edge of the Panda's reach, so the hand must stay
        on the robot's side of the nut. The hand's yaw is kept within +-2 rad of its start."""
        hand_yaw = self._eef_yaw()
        best, best_cost = nut_yaw, np.inf
        for k in range(4):
            goal = k * np.pi / 2
            turn = _wrap(goal - nut_yaw, 2 * np.pi)
            cost = abs(turn) + (10.0 if np.cos(goal) > 0.1 else 0.0) + (10.0 if abs(hand_yaw + turn) > 2.0 else 0.0)
            if cost < best_cost:
                best, best_cost = nut_yaw + turn, cost
        return best

    def plan(self) -> np.ndarray:
        env = self.env
        p = env.privileged()
        nut, handle, peg = p["object_pos"], p["grasp_pos"], p["target_pos"]
        eef = env.eef_pos()
        nut_yaw = quat_yaw(p["object_quat"])
        on_peg = np.abs(nut[:2] - peg[:2]).max() < 0.03 and nut[2] < self.table_z + 0.05
        if self._grip == OPEN and on_peg and not p["grasped"]:
            self._timer = max(self._timer - 1, 0)
            return self._move(np.array([eef[0], eef[1], peg[2] + 0.25]), self._eef_yaw())
        self._noise_scale = 1.0
        action = self._pick(handle, nut_yaw)
        if action is not None:
            self._nut_goal_yaw = None
            return action
        # Held: turn the hand so that the nut's hole lines up with the (axis-aligned) peg.
        if self._nut_goal_yaw is None:
            self._nut_goal_yaw = self._choose_nut_yaw(nut_yaw)
        yaw_err = _wrap(self._nut_goal_yaw - nut_yaw, 2 * np.pi)
        yaw = self._eef_yaw() + yaw_err
        self._yaw = yaw
        peg_top = peg[2] + self.peg_half_height
        lift_z = peg_top + 0.04  # nut centre: its 1 cm thick ring clears the peg top
        xy_err = np.linalg.norm(peg[:2] - nut[:2])
        # The arm sags a few mm under the nut's weight (OSC steady-state error): an integral term
        # on the xy error, plus a larger gain close in, bring it within the 6 mm hole clearance.
        self._xy_int = np.clip(self._xy_int + (peg[:2] - nut[:2]), -0.05, 0.05) if xy_err < 0.02 else 0 * self._xy_int
        shift = np.concatenate([1.2 * (peg[:2] - nut[:2]) + 0.1 * self._xy_int, [0.0]])
        above = nut[2] > peg_top - 0.005
        if xy_err > 0.01 or (above and (xy_err > 0.003 or abs(yaw_err) > 0.03)):
            if nut[2] < lift_z - 0.02 and xy_err > 0.02:  # lift clear of the table and peg first
                return self._move(eef + np.array([0.0, 0.0, lift_z - nut[2]]), yaw)
            self._noise_scale = 0.2 if xy_err < 0.03 else 1.0
            return self._move(eef + shift + np.array([0.0, 0.0, lift_z - nut[2]]), yaw, gain=0.7)
        self._noise_scale = 0.2  # over the peg: the 6 mm clearance leaves no room for shaking
        if nut[2] > self.table_z + 0.03:
            # Lowering; when the nut sits on the peg top instead of sliding down, lift and re-align.
            self._stuck = self._stuck + 1 if self._last_nut_z - nut[2] < 0.0005 else 0
            self._last_nut_z = float(nut[2])
            if self._stuck > 6:
                self._stuck = 0
                self._xy_int = 0 * self._xy_int
                return self._move(eef + np.array([0.0, 0.0, 0.03]), yaw)
            return self._move(eef + shift + np.array([0.0, 0.0, -0.02]), yaw, gain=0.7)
        self._open()
        return self._move(eef, yaw)


EXPERTS: dict[str, type[RobosuiteExpert]] = {"lift": LiftExpert, "can": CanExpert, "square": SquareExpert}


def make_expert(env: Any, noise: float = 0.0, skill: float = 1.0, seed: int | None = None) -> RobosuiteExpert:
    task = env.unwrapped.task
    if task not in EXPERTS:
        raise KeyError(f"no robosuite expert for task '{task}' (valid: {', '.join(EXPERTS)})")
    return EXPERTS[task](env, noise=noise, skill=skill, seed=seed)
