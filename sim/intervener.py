"""The simulated person of RaC / HABC / HG-DAgger sessions: a scripted expert behind the Intervener
protocol (vla.interfaces.Intervener).

While the policy acts, `wants_control` records the end-effector path and watches for imminent
failure:
- `regressed`: the sub-task went backwards (object dropped, tower knocked over) and stayed so for
  `regress_patience` steps: contact-based sub-task reports flicker while a policy holds an object
  loosely and while it lets go at the goal, and a takeover on such a flicker makes the expert
  re-grasp an object that was never lost (corrections that teach dropping it);
- `timeout`: too many steps in one sub-task;
- `off_plan`: the gripper wandered far (xy) from the corridor between the active object and its goal;
- `disagreement`: the policy's action (put in `info["policy_action"]` by the session loop) differs
  from the expert's by more than a threshold, averaged over a short window;
- `release` (with `release_guard`): the policy is about to open the gripper on an object it holds
  where the expert would still carry it. A person watching a premature release steps in before the
  drop, not after: the correction after a drop (re-grasp the object lying there) is a behaviour no
  demonstration shows, the one before it (carry on to the goal, then let go) differs from the
  demonstrations only in where it starts. (The expert lets go within 8 mm of the goal, so on a policy
  that releases anywhere inside the goal zone it also fires on releases that would have succeeded:
  52 of 100 episodes of the main job's camera policy, none of whose failures is a release.)
- `crooked_grasp` (with `grasp_yaw_guard`, degrees): the policy closes the gripper at the object
  (within 3 cm in xy) with the hand turned more than that from the object's faces (modulo 90
  degrees: box-shaped objects). The main job's camera policy loses the cube in 42% of its grasps at
  30 degrees or more against 8% below (experiments/failure_modes.py): the slip that follows is what a
  person watching would prevent, by turning the hand before it closes;
- `requested`: `request_takeover()` was called (a test, or a person's button in a UI).

Then, in RaC mode (arXiv 2509.07953), it first *rewinds*: drives the end effector back along the
recorded path to the latest earlier state that looked in-distribution (no failure sign, on plan),
those steps are returned with is_recovery=True; then it *corrects*: the expert finishes the
sub-task that was current at takeover (is_recovery=False); after a regression that is the sub-task
the policy had reached before it fell back (a cube dropped while carrying it: re-grasp *and* carry
it, not only re-grasp and hand the carry that failed back to the policy). RaC ends the episode after that
(`episode_done`); HG-DAgger mode skips the rewind and hands control back after the correction.

Where we differ from the paper: no rewind after a regression. Retracing the end-effector path
restores an in-distribution state only when the failure is the arm's own (drift, stall); a dropped
cube or a knocked-over tower stays where it fell, and rewinding the arm away from it records
"back off from the object" in states where the demonstrations approach it: conflicting labels
that cost RaC 20 points after one round in our first measurement (51% -> 31%).

Task-generic: it needs `eef_pos()`, `eef_quat()` (x, y, z, w) and `privileged()` from the env (see
`task_view`) and an expert with `act`, `reset` and `sync`; native and robosuite tasks qualify.
"""

from __future__ import annotations

import copy
import inspect
from collections import deque
from typing import Any

import numpy as np

from sim.experts.native import NativePickPlaceExpert, _quat_yaw
from vla.robot.arm import rewind_step
from vla.robot.rotations import quat_xyzw_to_mat

# robosuite OSC_POSE and the native tasks share these action scales.

MODES = ("rac", "hg_dagger")


def task_view(env: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    """(active object position, its goal position, whether it is held) from `env.privileged()`,
    for native tasks (`objects`/`active_object`/`goal_pos`/`held`) and robosuite ones
    (`object_pos`/`target_pos`/`grasped`; lift has no target: the goal is above the object)."""
    p = env.privileged()
    if "active_object" in p:
        return p["objects"][p["active_object"]]["pos"], p["goal_pos"], bool(p["held"])
    obj = np.asarray(p["object_pos"], dtype=np.float64)
    goal = np.asarray(p["target_pos"], dtype=np.float64) if "target_pos" in p else obj
    return obj, goal, bool(p.get("grasped", False))


def object_yaw(env: Any) -> float | None:
    """The active object's yaw (radians) from `env.privileged()` (native tasks: its (w, x, y, z)
    quaternion; robosuite: `object_quat` x, y, z, w); None when the task does not report it."""
    p = env.privileged()
    if "active_object" in p:
        q_wxyz = np.asarray(p["objects"][p["active_object"]]["quat"])
    elif "object_quat" in p:
        x, y, z, w = p["object_quat"]
        q_wxyz = np.array([w, x, y, z])
    else:
        return None
    return _quat_yaw(q_wxyz)


def hand_object_yaw(env: Any) -> float | None:
    """The active object's yaw minus the hand's (radians, wrapped to (-pi, pi]); None when the task
    does not report the object's orientation."""
    yaw = object_yaw(env)
    if yaw is None:
        return None
    r = quat_xyzw_to_mat(env.eef_quat())
    return float(np.angle(np.exp(1j * (yaw - np.arctan2(r[1, 0], r[0, 0])))))


def face_offset(d: float) -> float:
    """A yaw difference (radians) to the nearest face of a box, which looks the same every 90
    degrees: the signed turn in (-pi/4, pi/4]."""
    return float(np.angle(np.exp(4j * d)) / 4)


def grasp_yaw_error(env: Any) -> float | None:
    """Degrees between the hand's yaw and the active object's, modulo the 90 degrees of a box's
    symmetry; None when the task does not report the object's orientation."""
    d = hand_object_yaw(env)
    return None if d is None else float(np.degrees(abs(face_offset(d))))


class ExpertIntervener:
    """Intervener on a task's scripted expert (native or robosuite). Session loop per step: set
    `info["policy_action"]` (optional), call `wants_control(obs, info)`; if True execute
    `act(obs, info)`, else the policy's action. Stop the episode when `episode_done`."""

    def __init__(self, env: Any, expert: Any = None, mode: str = "rac", *,
                 subtask_timeout: int = 120, max_off_plan: float = 0.15, regress_patience: int = 8,
                 disagreement_threshold: float | None = None, disagreement_window: int = 5,
                 release_guard: bool = False, grasp_yaw_guard: float | None = None, label_rotation: bool = True,
                 label_tilt: bool = True, label_retreat: bool = True,
                 min_rewind: int = 5, max_rewind_steps: int = 40,
                 max_correction_steps: int = 200) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown intervener mode '{mode}' (valid: {', '.join(MODES)})")
        self.env = env.unwrapped
        # Default: the native tasks' expert; pass a robosuite expert for robosuite tasks.
        self.expert = expert if expert is not None else NativePickPlaceExpert(self.env)
        # experts without the closing hint (robosuite's) re-derive their memory from the state alone; read once,
        # not on every labelled step
        self._sync_hint = "closing" in inspect.signature(self.expert.sync).parameters
        self.mode = mode
        self.subtask_timeout, self.max_off_plan = subtask_timeout, max_off_plan
        if regress_patience < 1:
            raise ValueError(f"regress_patience must be >= 1 step, got {regress_patience}")
        self.regress_patience = regress_patience
        self.disagreement_threshold = disagreement_threshold
        self.disagreement_window = disagreement_window
        self.release_guard = release_guard
        self.grasp_yaw_guard = grasp_yaw_guard
        self.label_rotation, self.label_tilt, self.label_retreat = label_rotation, label_tilt, label_retreat
        self.min_rewind, self.max_rewind_steps = min_rewind, max_rewind_steps
        self.max_correction_steps = max_correction_steps
        self.reset()

    def reset(self) -> None:
        self.phase = "policy"  # policy | rewind | correct | done
        self.reason: str | None = None
        self.takeovers: list[tuple[int, str]] = []  # (step, reason)
        self.correction_failed = False
        self._history: list[tuple[np.ndarray, np.ndarray, bool]] = []  # eef pos, eef mat, in-distribution
        self._disagree: deque[float] = deque(maxlen=self.disagreement_window)
        self._last_stage = -1
        self._last_subtask = ""
        self._takeover_stage = 0
        self._seen_subtasks: list[str] = []
        self._was_held = False
        self._stage_steps = 0
        self._regress_steps = 0
        self._requested: str | None = None
        self._waypoints: list[tuple[np.ndarray, np.ndarray]] = []
        self._phase_steps = 0
        self.target_subtask = ""
        self._step = 0

    @property
    def episode_done(self) -> bool:
        """RaC: the intervention (rewind + correction) is over and the episode should end."""
        return self.phase == "done"

    def request_takeover(self, reason: str = "requested") -> None:
        self._requested = reason

    # ---- failure detection ------------------------------------------------------------------------
    def _stage_index(self, info: dict[str, Any]) -> int:
        """Progress through the task: finished sub-tasks where the env reports them, else the
        order in which sub-task names first appeared this episode."""
        if "subtasks_done" in info:
            return len(info["subtasks_done"])
        sub = str(info.get("subtask", ""))
        if sub not in self._seen_subtasks:
            self._seen_subtasks.append(sub)
        return self._seen_subtasks.index(sub)

    def _eef_mat(self) -> np.ndarray:
        return quat_xyzw_to_mat(self.env.eef_quat())

    def _off_plan(self) -> float:
        """xy distance of the gripper from the segment active object -> goal."""
        obj, goal, _ = task_view(self.env)
        a, b = obj[:2], goal[:2]
        e = self.env.eef_pos()[:2]
        ab = b - a
        t = np.clip(np.dot(e - a, ab) / max(np.dot(ab, ab), 1e-9), 0.0, 1.0)
        return float(np.linalg.norm(e - (a + t * ab)))

    def _expert_action(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        try:
            out = self.expert.act(obs, info)
        except TypeError:  # native experts take only obs
            out = self.expert.act(obs)
        return np.asarray(out[0] if isinstance(out, tuple) else out, dtype=np.float32)

    def _expert_action_peek(self, obs: Any, info: dict[str, Any], sync: bool = False) -> np.ndarray:
        """The expert's action now, without disturbing its memory (counters, random state);
        `sync`: from its memory re-derived from the state first (as at a takeover)."""
        saved: dict[str, Any] = {}
        for key, value in vars(self.expert).items():
            if isinstance(value, np.random.Generator):
                saved[key] = ("rng", value.bit_generator.state)
            elif key != "env":
                saved[key] = ("value", copy.deepcopy(value))
        try:
            if sync:
                if not self.label_retreat and hasattr(self.expert, "retreat"):
                    self.expert.retreat = False  # restored with the rest of its memory below
                closing = "policy_action" in info and float(info["policy_action"][-1]) > 0
                self.expert.sync(**({"closing": closing} if self._sync_hint else {}))
            return self._expert_action(obs, info)
        finally:
            for key, (kind, value) in saved.items():
                if kind == "rng":
                    getattr(self.expert, key).bit_generator.state = value
                else:
                    setattr(self.expert, key, value)

    def label(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        """DAgger's label for a step the policy takes (Ross et al., arXiv 1011.0686): the expert's
        action from this state, as if it took over now (its gripper memory re-derived from the state
        and from whether the policy is closing, `info["policy_action"]`), without disturbing the
        expert. HG-DAgger labels only the steps after a takeover; DAgger labels every state the
        policy visits, including the ones before a failure that no takeover flags (a grasp closing
        a centimetre off centre, which slips later).

        `label_rotation=False` keeps the policy's own rotation in the label (the expert's translation
        and gripper only): a camera policy that cannot read the object's yaw from its images gets
        "turn" labels it cannot act on, and with the demos' small rotation spread (they turn in 2-3
        steps) those targets are several normalised units, most of the loss. `label_tilt=False` keeps
        only the policy's roll and pitch (action dims 3-4, about the world's x and y) and labels the
        yaw: the demos hardly ever tilt, so the expert's untilting labels are tens of normalised units,
        while its yaw is what decides whether it lets the hand descend to grasp. `label_retreat=False`
        (native experts): below hover height and not yet over the object, the label centres the hand
        at its height instead of the expert's climb back to hover, which contradicts the demos at the
        states a policy that approaches lower visits."""
        label = self._expert_action_peek(obs, info, sync=True)
        keep = slice(3, 6) if not self.label_rotation else slice(3, 5) if not self.label_tilt else None
        if keep is not None and "policy_action" in info:
            label[keep] = np.asarray(info["policy_action"], dtype=np.float32)[keep]
        return label

    def _failure_reason(self, obs: Any, info: dict[str, Any]) -> str | None:
        if self._requested:
            return self._requested
        stage = self._stage_index(info)
        _, _, held = task_view(self.env)
        # Without an env-reported list of finished sub-tasks, names can flicker (reach/grasp): only
        # a fall back after the object had been held counts as regression there.
        exact = "subtasks_done" in info
        fell_back = (stage < self._last_stage and not info.get("success", False)
                     and (exact or (self._was_held and not held)))
        self._regress_steps = self._regress_steps + 1 if fell_back else 0
        if self._regress_steps >= self.regress_patience:
            return "regressed"
        if self._stage_steps > self.subtask_timeout:
            return "timeout"
        if self._off_plan() > self.max_off_plan:
            return "off_plan"
        # the gripper command is the action's last entry (-1 open, +1 close) on every task here
        if (self.release_guard and held and "policy_action" in info
                and float(info["policy_action"][-1]) < 0 <= float(self._expert_action_peek(obs, info)[-1])):
            return "release"
        if (self.grasp_yaw_guard is not None and not held and "policy_action" in info
                and float(info["policy_action"][-1]) > 0):
            obj = task_view(self.env)[0]
            err = grasp_yaw_error(self.env)
            if (err is not None and err > self.grasp_yaw_guard
                    and np.linalg.norm(self.env.eef_pos()[:2] - obj[:2]) < 0.03):
                return "crooked_grasp"
        if self.disagreement_threshold is not None and "policy_action" in info:
            pa = np.asarray(info["policy_action"], dtype=np.float64)
            ea = self._expert_action_peek(obs, info).astype(np.float64)
            self._disagree.append(float(np.linalg.norm(pa[:3] - ea[:3])))
            if (len(self._disagree) == self.disagreement_window
                    and np.mean(self._disagree) > self.disagreement_threshold):
                return "disagreement"
        return None

    # ---- protocol ---------------------------------------------------------------------------------
    def wants_control(self, obs: Any, info: dict[str, Any]) -> bool:
        self._step += 1
        stage = self._stage_index(info)
        if self.phase in ("rewind", "correct"):
            done = stage > self._takeover_stage or info.get("success", False)
            if self.phase == "correct" and (done or self._phase_steps >= self.max_correction_steps):
                self.correction_failed = not done
                self._hand_back(stage, str(info.get("subtask", "")))
                return False
            return True
        if self.phase == "done":
            return False
        self._stage_steps = self._stage_steps + 1 if stage == self._last_stage else 0
        reason = self._failure_reason(obs, info)
        if reason is None:
            if stage >= self._last_stage:
                self._last_stage, self._last_subtask = stage, str(info.get("subtask", ""))
            self._was_held = self._was_held or task_view(self.env)[2]
            self._history.append((self.env.eef_pos(), self._eef_mat(), self._off_plan() < self.max_off_plan / 2))
            return False
        self._take_over(reason, info, stage)
        return True

    def _take_over(self, reason: str, info: dict[str, Any], stage: int) -> None:
        self.reason, self._requested = reason, None
        self.takeovers.append((self._step, reason))
        if reason == "regressed":  # finish what the policy had reached before falling back
            self.target_subtask, self._takeover_stage = self._last_subtask, self._last_stage
        else:
            self.target_subtask, self._takeover_stage = str(info.get("subtask", "")), stage
        self._phase_steps = 0
        if self.mode == "rac" and self._history and reason != "regressed":
            # Latest in-distribution record at least min_rewind steps back, else the oldest one.
            last = len(self._history) - 1 - self.min_rewind
            start = 0
            for i in range(max(last, 0), -1, -1):
                if self._history[i][2]:
                    start = i
                    break
            self._waypoints = [(p, r) for p, r, _ in self._history[start:]][::-1]
            self.phase = "rewind"
        else:
            self._begin_correction()

    def _begin_correction(self) -> None:
        self.phase, self._phase_steps = "correct", 0
        self.expert.sync()

    def _hand_back(self, stage: int, subtask: str) -> None:
        if self.mode == "rac":
            self.phase = "done"
            return
        self.phase = "policy"
        self._history.clear()
        self._disagree.clear()
        self._last_stage, self._stage_steps, self._was_held = stage, 0, False
        self._last_subtask = subtask
        self._regress_steps = 0

    def act(self, obs: Any, info: dict[str, Any]) -> tuple[np.ndarray, bool]:
        self._phase_steps += 1
        if self.phase == "rewind":
            action = self._rewind_action()
            if action is not None:
                return action, True
            self._begin_correction()
        if self.phase != "correct":
            raise RuntimeError(f"act() called while the intervener does not hold control (phase '{self.phase}')")
        return self._expert_action(obs, info), False

    def _rewind_action(self) -> np.ndarray | None:
        """Next step back along the recorded path, or None once the rewind target is reached."""
        if self._phase_steps > self.max_rewind_steps:
            return None
        # Keep a held object (do not add a drop to the failure); otherwise open, as on approach.
        gripper = 1.0 if task_view(self.env)[2] else -1.0
        return rewind_step(self._waypoints, self.env.eef_pos(), self._eef_mat(), gripper)


# intervener_args keys for the person's expert rather than the intervener: `expert_gain` corrects with the
# demos' gain (a person who took over drives as the demos did; sim.experts.native, `gain`)
EXPERT_KEYS = {"expert_gain": "gain"}


def intervener_expert_options(spec: dict[str, Any]) -> dict[str, Any]:
    """The native expert's options the spec's intervener_args set (EXPERT_KEYS)."""
    args = spec.get("intervener_args") or {}
    return {kw: float(args[k]) for k, kw in EXPERT_KEYS.items() if args.get(k) is not None}


def intervener_args(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec's ExpertIntervener keywords (JSON numbers; the counts among them as int, the switches
    as bool: a typed config may hand `release_guard: true` over as 1.0); EXPERT_KEYS are not among them."""
    valid = inspect.signature(ExpertIntervener).parameters
    args = {k: v for k, v in (spec.get("intervener_args") or {}).items() if k not in EXPERT_KEYS}
    names = sorted({*valid, *EXPERT_KEYS} - {"env", "expert", "mode"})
    unknown = sorted(set(args) - set(valid) - {"env", "expert", "mode"})
    if unknown:
        raise ValueError(f"unknown intervener_args {unknown} (valid: {names})")
    def typed(k: str, v: Any) -> Any:
        if isinstance(valid[k].default, bool):
            return bool(v)
        return int(v) if isinstance(valid[k].default, int) and float(v).is_integer() else v

    return {k: typed(k, v) for k, v in args.items()}
