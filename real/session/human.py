"""The person as an Intervener: `HumanIntervener` turns a `real.teleop.TeleopDevice`'s commands into
the `vla.interfaces.Intervener` protocol, the one the scripted expert implements too."""

from __future__ import annotations

from typing import Any

import numpy as np

from real.teleop import TeleopCommand, TeleopDevice
from vla.robot.arm import rewind_step
from vla.robot.rotations import quat_xyzw_to_mat

HUMAN_MODES = ("rac", "hg_dagger")


class HumanIntervener:
    """A person with a `TeleopDevice` behind the Intervener protocol (vla.interfaces).

    The device is polled once per step in `wants_control`. Take over / hand back on the toggle
    (HG-DAgger; in `rac` mode handing back ends the episode, as RaC ends episodes after the
    intervention). Rewind on demand (RaC): drive back along the recorded end-effector path with
    `vla.robot.arm.rewind_step`, the scripted intervener's rewind; those steps are
    is_recovery=True. The path is recorded while the policy or the person drives; a rewind
    consumes it, so a second rewind continues further back. The gripper keeps its state through a
    rewind (a held object stays held). The env needs `eef_pos()` and `eef_quat()` (x, y, z, w).
    """

    def __init__(self, device: TeleopDevice, env: Any, mode: str = "hg_dagger", max_rewind_steps: int = 200) -> None:
        if mode not in HUMAN_MODES:
            raise ValueError(f"unknown intervener mode '{mode}' (valid: {', '.join(HUMAN_MODES)})")
        self.device, self.env, self.mode = device, env.unwrapped, mode
        self.max_rewind_steps = max_rewind_steps
        self.reset()

    def reset(self) -> None:
        self.phase = "policy"  # policy | human | rewind | done
        self.takeovers: list[tuple[int, str]] = []
        self.outcome: str | None = None  # the person's end mark
        self.quit_requested = False
        self._history: list[tuple[np.ndarray, np.ndarray]] = []
        self._waypoints: list[tuple[np.ndarray, np.ndarray]] = []
        self._cmd = TeleopCommand()
        self._gripper = -1.0
        self._rewind_steps = 0
        self._step = 0

    @property
    def episode_done(self) -> bool:
        return self.phase == "done"

    def _pose(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.env.eef_pos(), np.float64), quat_xyzw_to_mat(self.env.eef_quat())

    def wants_control(self, obs: Any, info: dict[str, Any]) -> bool:
        self._step += 1
        if self.phase == "done":
            return False
        cmd = self._cmd = self.device.poll()
        if cmd.quit or cmd.end is not None:
            self.quit_requested, self.outcome, self.phase = cmd.quit, None if cmd.quit else cmd.end, "done"
            return False
        if cmd.toggle_control:
            if self.phase == "policy":
                self._take_over(info)
            else:
                self._hand_back()
                return False
        if cmd.rewind:
            if self.phase == "rewind":
                self._stop_rewind()
            else:
                if self.phase == "policy":
                    self._take_over(info)
                self._start_rewind()
        elif self.phase == "rewind" and cmd.moving:
            self._stop_rewind()  # the person grabbed the controls
        if self.phase in ("policy", "human"):
            self._history.append(self._pose())
        return self.phase in ("human", "rewind")

    def _take_over(self, info: dict[str, Any]) -> None:
        self.takeovers.append((self._step, "requested"))
        self.phase = "human"
        # Start from the gripper state the policy commanded, so taking over never drops an object.
        policy_action = info.get("policy_action")
        if policy_action is not None:
            self._gripper = 1.0 if float(np.asarray(policy_action)[-1]) > 0 else -1.0

    def _hand_back(self) -> None:
        self._stop_rewind()
        self.phase = "done" if self.mode == "rac" else "policy"

    def _start_rewind(self) -> None:
        if self._history:
            self._waypoints, self._history = self._history[::-1], []
            self.phase, self._rewind_steps = "rewind", 0

    def _stop_rewind(self) -> None:
        if self.phase == "rewind":
            self._history, self._waypoints = self._waypoints[::-1], []
            self.phase = "human"

    def act(self, obs: Any, info: dict[str, Any]) -> tuple[np.ndarray, bool]:
        if self.phase == "rewind":
            self._rewind_steps += 1
            pos, mat = self._pose()
            action = None
            if self._rewind_steps <= self.max_rewind_steps:
                action = rewind_step(self._waypoints, pos, mat, self._gripper)
            if action is not None:
                return action, True
            self._stop_rewind()
        if self.phase != "human":
            raise RuntimeError(f"act() called while the person does not hold control (phase '{self.phase}')")
        if self._cmd.gripper_toggle:
            self._gripper = -self._gripper
        return np.concatenate([self._cmd.motion, [self._gripper]]).astype(np.float32), False
