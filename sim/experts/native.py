"""Scripted pick-and-place expert for the native tasks (pick_place, stack3).

Reactive over privileged state: each step it reads the task's active object and goal from
`env.privileged()` and decides from the current state (held or not, gripper open or closed, where
the end effector is) what to do, so it can take over from any reachable state (after a policy, a
drop, a failed grasp). The only memory is the gripper command and a few counters.

Mixed-quality demos: `noise` adds Gaussian noise to the motion part of each action; `skill` in
[0, 1] (1 = expert) lowers speed, adds hesitations (a few motionless steps) and sometimes misses the
first grasp of an object on purpose (lands beside it, closes on nothing, then retries).
`clean_action` is the last action before its noise: the label of DART demos (arXiv:1703.09327),
which execute the noisy action and teach the clean one.

Demos with recoveries: `drop` is the chance per episode that the expert's hand lets go of the object
once while carrying it (the executed gripper command opens for a few steps, then closes on nothing),
after which the expert, reactive as it is, goes back and grasps it again. Recorded with the clean
labels (`label=clean`), such an episode teaches what no clean demo shows: from a hand closed on
nothing above a fallen object, open and pick it up again. That is where the main job's camera policy
ends most of its failures (a grasp that slips during the lift, then ~170 steps of wandering:
benchmarks/results/main_job_notes.md). The drop is a perturbation of the executed action, as DART's
noise is, not a slip of the physics, so the object falls out of an open hand rather than sliding
out of a closed one; what the policy is taught starts once it has fallen.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sim.tasks.native.base import POS_SCALE, ROT_SCALE, NativeArmEnv
from vla.robot.rotations import rotvec

HOVER = 0.10  # approach height above the object's centre
CARRY = 0.09  # clearance of the held object's centre above its goal while carrying
GRASP_DZ = 0.008  # grip site above the object's centre at the grasp (keeps the pads off the table)
CLOSE_STEPS = 6  # steps the fingers get to close before a missing grasp is declared
LATE_TURN_XY = 0.02  # turn_late: the hand turns once this close (horizontally) over the object
DROP_OPEN = 3  # executed steps of an open gripper that make a held object fall (`drop`)
DROP_LIFT = 0.02  # the held object's bottom at least this high above the table before a drop
DROP_FAR = 0.08  # and its centre this far from the goal's (in the table plane)
# `drift`: a sideways push on the executed motion for this many steps as the hand comes down to grasp, of this
# much action (0.4: about a centimetre a step through the arm's tracking): about the overshoot one tick of command
# latency leaves (robustness_training.md); the hand ends about 2 cm beside the object, 6-7 cm above the table
DRIFT_STEPS, DRIFT_PUSH = 3, 0.4
DRIFT_BELOW = 0.05  # the push starts once the grip site is this close above the object's centre


def _rot_x_pi_then_yaw(yaw: float) -> np.ndarray:
    """Gripper pointing down (hand z = -world z) with its x axis at `yaw` in the table plane."""
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, s, 0.0], [s, -c, 0.0], [0.0, 0.0, -1.0]])


def _quat_yaw(q_wxyz: np.ndarray) -> float:
    w, x, y, z = q_wxyz
    return float(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))

# the expert's feedback gain (its default: see NativePickPlaceExpert.__init__, `gain`)
GAIN = 1.5


class NativePickPlaceExpert:
    """Scripted expert for any native task whose `privileged()` names an active object and goal."""

    def __init__(self, env: Any, noise: float = 0.0, skill: float = 1.0, seed: int | None = None,
                 rot_speed: float | None = None, drop: float = 0.0, turn_late: bool = False,
                 gain: float | None = None, drift: float = 0.0, rot_noise: float = 0.0) -> None:
        """`rot_speed`: a cap on the rotation action (of 1), so the hand turns to the object over the
        approach instead of within its first 2-3 steps: a policy that must read the object's yaw
        from an image then sees that turn in every partly turned state on the way, not only in the
        first frame (the main job's camera policy, trained on full-speed demos, turns its hand
        uncorrelated with the object's yaw: benchmarks/results/main_job_notes.md).

        `turn_late`: keep the hand's yaw on the way and turn only once it hovers over the object
        (within LATE_TURN_XY), where the wrist camera looks straight down on it: the turn the demos
        teach is then the one the wrist view shows, the object's edges against the pads', instead of a
        yaw read from a few pixels of the far agent view (sort's and pick_place's camera policies
        grasp with the hand as it started: their grasp's yaw error follows the object's initial one,
        r = 0.96, and turned 30+ degrees off they slip half the time). On sort the policy then grasps
        centred, and four trainings average 0.885 at 15,000 steps against the recipe's 0.823 over the same
        four seeds at 20,000 (seed by seed -0.02 to +0.17, +0.06 [-0.07, +0.19]: language_recipe_turn_late.md);
        on the main job's pick_place it did worse (0.715: main_job_notes.md).

        `gain`: the feedback gain from the remaining error (in steps of full action) to the action, GAIN by
        default. Above 1 the hand overshoots its target each step and settles by alternating; a command that
        reaches the arm a step late then makes that loop unstable (e_{t+1} = e_t - k e_{t-1} diverges for
        k > 1): with 1.5 the expert takes 80 steps instead of 37 to finish at one step of latency and fails
        every episode at two. Below 1 it approaches without overshoot and tolerates the delay; a policy
        imitating it inherits its loop gain.

        `drift`: chance per episode that, once the hand comes down within DRIFT_BELOW of the object with the
        gripper open, the executed motion is pushed sideways (DRIFT_STEPS steps of DRIFT_PUSH in a random horizontal
        direction). The expert, reactive, stops its descent and centres over the object at that height. Recorded
        with the clean labels (`label=clean`), such a demo teaches what the clean ones never show and what a
        policy on an arm whose commands arrive a tick late needs: beside the object near grasp height, move
        over it before going down (its failures under that latency come down 2-3 cm beside the cube and never
        correct). DART's noise (arXiv:1703.09327) on every step, structured and placed where the policy fails.

        `rot_noise`: Gaussian noise of this fraction of full scale on each executed rotation dimension, every
        step, from a stream of its own. Recorded with the clean labels, the demos show the hand tilted further
        than the arm's own motion tilts it (about half a degree) and the expert righting it. Aimed at a policy
        that learns no tilt feedback from clean demos, so that a real arm's command noise tilts its hand in a
        random walk (the main job's policy lost 0.06 under 2% command noise on the rotation alone and nothing on
        the translation alone). DART (arXiv:1703.09327) on the dimensions the policy does not correct; at 0.02 it
        cost the policy a quarter of its clean success (robustness_training.md, t_g07pcr), so it is off by default."""
        if not 0.0 <= skill <= 1.0:
            raise ValueError(f"skill must be in [0, 1], got {skill}")
        if noise < 0.0:
            raise ValueError(f"noise must be >= 0, got {noise}")
        if rot_speed is not None and not 0.0 < rot_speed <= 1.0:
            raise ValueError(f"rot_speed must be in (0, 1] (or None: as fast as translation), got {rot_speed}")
        if not 0.0 <= drop <= 1.0:
            raise ValueError(f"drop must be a probability in [0, 1], got {drop}")
        if not 0.0 <= drift <= 1.0:
            raise ValueError(f"drift must be a probability in [0, 1], got {drift}")
        if not 0.0 <= rot_noise <= 1.0:
            raise ValueError(f"rot_noise must be a fraction of full scale in [0, 1], got {rot_noise}")
        if gain is not None and not 0.0 < gain <= 3.0:
            raise ValueError(f"gain must be in (0, 3] (or None: {GAIN}), got {gain}")
        self.gain = GAIN if gain is None else float(gain)
        self.env: NativeArmEnv = env.unwrapped
        self.noise, self.skill = float(noise), float(skill)
        self.rot_speed, self.drop, self.turn_late = rot_speed, float(drop), bool(turn_late)
        self.drift, self.rot_noise = float(drift), float(rot_noise)
        # False: off its approach and below hover height, centre over the object at the current height
        # instead of climbing back to hover first (a DAgger label from where a policy is, not a retry)
        self.retreat = True
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)
        self._grip = -1.0
        self._close_steps = 0
        self._pause = 0
        self._offsets: dict[str, np.ndarray] = {}
        self._target = self.env.eef_pos()
        self.clean_action: np.ndarray | None = None
        # the drop, drawn per episode: after how many lifted steps, and how long the hand then stays
        # closed on nothing before the expert's own command takes over again. From a stream of its own,
        # so that the noise and skill draws (and every demo collected before drops existed) stay the same
        self._drop_at, self._drop_shut = -1, 0
        if self.drop > 0:
            rng = np.random.default_rng(None if seed is None else [seed, 0xD809])
            self._drop_at = int(rng.integers(1, 5)) if rng.random() < self.drop else -1
            self._drop_shut = int(rng.integers(0, 8))
        self._lifted, self._drop_step = 0, -1
        self.dropped = False
        # the drift, drawn per episode from its own stream (the other draws stay as they were): its direction,
        # and how many of its steps are left (-1: not yet started, 0: over or none)
        self._drift_left, self._drift_dir = 0, np.zeros(2)
        if self.drift > 0:
            rng = np.random.default_rng(None if seed is None else [seed, 0xD41F7])
            if rng.random() < self.drift:
                angle = rng.uniform(0.0, 2 * np.pi)
                self._drift_left, self._drift_dir = -1, np.array([np.cos(angle), np.sin(angle)])
        self._rot_rng = np.random.default_rng(None if seed is None else [seed, 0x207])

    @property
    def target(self) -> np.ndarray:
        """The end-effector position the expert is currently heading for (its plan)."""
        return self._target.copy()

    def sync(self, closing: bool = False) -> None:
        """Re-derive the gripper memory from the state, before taking over from someone else.

        `closing`: whoever had control is closing the gripper now. If the object sits centred
        between the pads (within the expert's own grasp tolerance) the expert closes on it too
        instead of opening to start its approach again; off centre it opens, which is the point:
        a DAgger label (sim.intervener.ExpertIntervener.label) at a grasp closing off centre says
        "open and centre", at one closing well says "keep closing"."""
        p = self.env.privileged()
        obj = p["objects"][p["active_object"]]
        held = self.env.is_grasped(obj["geom"])
        self._grip, self._close_steps, self._pause = (1.0 if held else -1.0), CLOSE_STEPS, 0
        if not held and closing and self._centred(obj["pos"], obj["half"]):
            self._grip, self._close_steps = 1.0, 0

    def _centred(self, opos: np.ndarray, half: float) -> bool:
        """Object centred between the open pads at grasp height: where the expert itself closes."""
        local = self.env.eef_mat().T @ (opos - self.env.eef_pos())
        return bool(abs(local[0]) < 0.012 and abs(local[1]) < 0.012 and abs(local[2]) < half + 0.015)

    def _misgrasp_offset(self, name: str, yaw: float) -> np.ndarray:
        if name not in self._offsets:
            miss = self._rng.random() < 0.6 * (1.0 - self.skill)
            # Along the pads' width (hand x): the fingers come down beside the object.
            self._offsets[name] = 0.045 * np.array([np.cos(yaw), np.sin(yaw)]) * miss
        return self._offsets[name]

    def _in_hand(self, opos: np.ndarray, half: float) -> bool:
        """Object between the closed pads (geometric), so one contact-free physics step during a
        firm grasp is not taken for a drop."""
        local = self.env.eef_mat().T @ (opos - self.env.eef_pos())
        return bool(abs(local[0]) < half + 0.01 and abs(local[1]) < 0.015 and abs(local[2]) < half + 0.015
                    and self.env.gripper_opening() < 2 * half + 0.006)

    def _plan(self) -> tuple[np.ndarray, float | None]:
        """(target eef position, target yaw or None to keep) and updates the gripper command."""
        env = self.env
        p = env.privileged()
        name = p["active_object"]
        obj = p["objects"][name]
        opos, half = obj["pos"], obj["half"]
        eef = env.eef_pos()
        if env.is_grasped(obj["geom"]) or (self._grip > 0 and self._in_hand(opos, half)):
            self._grip, self._close_steps = 1.0, CLOSE_STEPS
            goal = p["goal_pos"]
            offset = eef - opos  # keep the grasp offset: we steer the object, not the hand
            dxy = np.linalg.norm(opos[:2] - goal[:2])
            if dxy > 0.008:
                carry_z = goal[2] + CARRY + offset[2]
                if eef[2] < carry_z - 0.03 and dxy > 0.03:
                    return np.array([eef[0], eef[1], carry_z]), None
                return np.array([goal[0] + offset[0], goal[1] + offset[1], carry_z]), None
            if opos[2] - goal[2] < 0.006:
                self._grip = -1.0
            return np.array([goal[0] + offset[0], goal[1] + offset[1], goal[2] + offset[2] - 0.004]), None

        if self._grip > 0:
            if self._close_steps < CLOSE_STEPS:
                self._close_steps += 1
                return eef, None
            # Closed without holding anything: a miss (or a release); open, forget the planned miss.
            self._grip = -1.0
            self._offsets[name] = np.zeros(2)
        cur_yaw = np.arctan2(env.eef_mat()[1, 0], env.eef_mat()[0, 0])
        obj_yaw = _quat_yaw(obj["quat"])
        yaw = obj_yaw + np.round((cur_yaw - obj_yaw) / (np.pi / 2)) * (np.pi / 2)
        aim = opos[:2] + self._misgrasp_offset(name, yaw)
        xy_err = np.linalg.norm(eef[:2] - aim)
        yaw_err = abs(np.angle(np.exp(1j * (cur_yaw - yaw))))
        ready = xy_err < 0.012 and yaw_err < 0.12 and env.gripper_opening() > 2 * half + 0.02
        if not ready:
            turn = yaw if not self.turn_late or xy_err < LATE_TURN_XY else None
            if not self.retreat and eef[2] < opos[2] + HOVER:
                return np.array([aim[0], aim[1], max(eef[2], opos[2] + GRASP_DZ + 0.02)]), turn
            if eef[2] < opos[2] + HOVER - 0.04 and xy_err > 0.03:
                return np.array([eef[0], eef[1], opos[2] + HOVER]), turn
            return np.array([aim[0], aim[1], opos[2] + HOVER]), turn
        target = np.array([aim[0], aim[1], opos[2] + GRASP_DZ])
        if eef[2] - target[2] < 0.008:
            self._grip, self._close_steps = 1.0, 0
        return target, yaw

    def _drop_grip(self) -> float | None:
        """The executed gripper command while a drop plays out (None: the expert's own)."""
        if self._drop_at < 0 or self.dropped:
            return None
        if self._drop_step < 0:
            p = self.env.privileged()
            obj = p["objects"][p["active_object"]]
            far = np.linalg.norm(obj["pos"][:2] - p["goal_pos"][:2]) > DROP_FAR  # not into the goal
            if self.env.is_grasped(obj["geom"]) and obj["pos"][2] > obj["half"] + DROP_LIFT and far:  # table: z = 0
                self._lifted += 1
            if self._lifted < self._drop_at:
                return None
            self._drop_step = 0
        self._drop_step += 1
        if self._drop_step > DROP_OPEN + self._drop_shut:
            self.dropped = True
            return None
        return -1.0 if self._drop_step <= DROP_OPEN else 1.0

    def _drift_push(self) -> np.ndarray | None:
        """The sideways push on this step's executed motion while a drift plays out (None: none)."""
        if self._drift_left == -1:
            p = self.env.privileged()
            obj = p["objects"][p["active_object"]]
            over = self.env.eef_pos()[2] < obj["pos"][2] + DRIFT_BELOW
            if over and self._grip < 0 and not self.env.is_grasped(obj["geom"]):
                self._drift_left = DRIFT_STEPS
        if self._drift_left <= 0:
            return None
        self._drift_left -= 1
        return DRIFT_PUSH * self._drift_dir

    def act(self, obs: Any = None) -> np.ndarray:
        """One action float32[7]; `obs` is unused (the expert reads privileged state)."""
        env = self.env
        drop_grip = self._drop_grip()
        target, yaw = self._plan()
        self._target = target
        speed = 0.4 + 0.6 * self.skill
        if self._pause > 0:
            self._pause -= 1
            self.clean_action = np.array([0, 0, 0, 0, 0, 0, self._grip], dtype=np.float32)
            return self.clean_action.copy()
        if self._rng.random() < 0.12 * (1.0 - self.skill):
            self._pause = int(self._rng.integers(2, 7))
        dpos = np.clip((target - env.eef_pos()) / POS_SCALE * self.gain, -speed, speed)
        r = env.eef_mat()
        if yaw is None:
            cur_yaw = np.arctan2(r[1, 0], r[0, 0])
            yaw = cur_yaw
        rot_speed = speed if self.rot_speed is None else min(speed, self.rot_speed)
        drot = np.clip(rotvec(_rot_x_pi_then_yaw(yaw) @ r.T) / ROT_SCALE * self.gain, -rot_speed, rot_speed)
        motion = np.concatenate([dpos, drot])
        # while the hand is forced open the object is still between the pads: the label is to keep
        # holding it (the expert's own plan turns to "open" as soon as it slides out, and taught as
        # such, a policy learns to let go during the lift: 11 of 200 episodes did)
        label_grip = 1.0 if drop_grip is not None and self._drop_step <= DROP_OPEN else self._grip
        self.clean_action = np.concatenate([motion, [label_grip]]).astype(np.float32)
        push = self._drift_push()
        if push is not None:
            motion = motion.copy()
            motion[:2] = np.clip(motion[:2] + push, -1.0, 1.0)
        if self.rot_noise > 0:
            motion = motion.copy()
            motion[3:6] = np.clip(motion[3:6] + self._rot_rng.normal(0.0, self.rot_noise, 3), -1.0, 1.0)
        if self.noise > 0:
            # Half as much on rotation: rotation noise shakes a held cube loose far more than
            # translation noise, and we want sloppy demos, not mostly dropped ones.
            scale = np.array([1, 1, 1, 0.5, 0.5, 0.5]) * self.noise
            motion = np.clip(motion + self._rng.normal(0.0, 1.0, 6) * scale, -1.0, 1.0)
        return np.concatenate([motion, [self._grip if drop_grip is None else drop_grip]]).astype(np.float32)
