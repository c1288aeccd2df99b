"""Safety layer between the action queue and the robot.

Every command that leaves the executor passes `SafetyFilter.step`. Guarantees, per joint and per
tick (dt = 1 / control rate), for every emitted command q_t:

- finite, within [lower, upper];
- |q_t - q_{t-1}| / dt <= max_velocity;
- |v_t - v_{t-1}| / dt <= max_acceleration whenever that is compatible with the two limits above
  (positions win over velocities, velocities over accelerations).

A rejected action (NaN/inf, wrong size, outside the position limits), a missing action (starved
queue), a stale observation, a dead inference worker or an emergency stop make the robot *hold*:
it decelerates at the acceleration limit from the last safe command to rest. Every such event is
logged and kept in `events`. The emergency stop latches until `clear_emergency_stop()`.

The braking bound (a joint never moves faster than it can stop before its position limit) is the
time-optimal stopping distance of a double integrator (v^2 / (2 a) in continuous time), computed
exactly for the discrete-time integrator that the commands form.
"""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JointLimits:
    """Per-joint limits in the robot's units (rad, rad/s, rad/s^2 for revolute joints)."""

    names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    max_velocity: np.ndarray
    max_acceleration: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.names)
        if n == 0:
            raise ValueError("JointLimits needs at least one joint")
        for name in ("lower", "upper", "max_velocity", "max_acceleration"):
            arr = np.asarray(getattr(self, name), dtype=np.float64)
            if arr.shape != (n,):
                raise ValueError(f"JointLimits.{name} has shape {arr.shape}, expected ({n},) for joints {self.names}")
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"JointLimits.{name} must be finite, got {arr}")
            object.__setattr__(self, name, arr)
        if np.any(self.lower >= self.upper):
            raise ValueError(f"JointLimits: lower must be < upper, got lower={self.lower} upper={self.upper}")
        if np.any(self.max_velocity <= 0) or np.any(self.max_acceleration <= 0):
            raise ValueError("JointLimits: max_velocity and max_acceleration must be positive")

    @classmethod
    def from_config(cls, cfg: dict) -> JointLimits:
        """From a mapping with `names`, `lower`, `upper`, `max_velocity`, `max_acceleration` (lists)."""
        missing = [k for k in ("names", "lower", "upper", "max_velocity", "max_acceleration") if k not in cfg]
        if missing:
            raise ValueError(f"joint limits config lacks {missing}")
        return cls(names=tuple(str(n) for n in cfg["names"]),
                   **{k: np.asarray(cfg[k], dtype=np.float64)
                      for k in ("lower", "upper", "max_velocity", "max_acceleration")})

    @classmethod
    def from_urdf(cls, urdf: str | Path, joints: list[str], max_acceleration: float | list[float]) -> JointLimits:
        """Read `<limit lower upper velocity>` of the named joints from a URDF file or string.

        URDF has no acceleration limit, so it is given separately.
        """
        text = Path(urdf).read_text() if not str(urdf).lstrip().startswith("<") else str(urdf)
        root = ET.fromstring(text)
        by_name = {j.get("name"): j for j in root.iter("joint")}
        lo, hi, vel = [], [], []
        for name in joints:
            joint = by_name.get(name)
            if joint is None:
                raise ValueError(f"URDF has no joint named {name!r} (joints: {sorted(k for k in by_name if k)})")
            limit = joint.find("limit")
            if limit is None or limit.get("lower") is None or limit.get("upper") is None:
                raise ValueError(f"URDF joint {name!r} has no <limit lower=.. upper=..>")
            if limit.get("velocity") is None:
                raise ValueError(f"URDF joint {name!r} has no velocity limit")
            lo.append(float(limit.get("lower")))
            hi.append(float(limit.get("upper")))
            vel.append(float(limit.get("velocity")))
        acc = np.broadcast_to(np.asarray(max_acceleration, dtype=np.float64), (len(joints),)).copy()
        return cls(tuple(joints), np.array(lo), np.array(hi), np.array(vel), acc)


def implausible_joint_state(limits: JointLimits, position: np.ndarray, velocity: np.ndarray | None,
                            position_tolerance: float, velocity_factor: float) -> str | None:
    """Why a measured joint state cannot be the arm's (None when it can): a position outside
    [lower - tolerance, upper + tolerance] or a speed above `velocity_factor` x max_velocity.

    The values are finite already (the message boundary checks that); these are finite but physically
    impossible, as from a broken encoder or driver. A policy fed 100 rad drives its joints at their
    velocity limit towards wherever that points, so the caller holds instead.
    """
    q = np.asarray(position, dtype=np.float64)
    lo, hi = limits.lower - position_tolerance, limits.upper + position_tolerance
    bad = np.flatnonzero((q < lo) | (q > hi))
    if bad.size:
        i = int(bad[0])
        return (f"joint {limits.names[i]} reported at {q[i]:.6g}, outside its range [{limits.lower[i]:g}, "
                f"{limits.upper[i]:g}] by more than {position_tolerance:g}"
                + (f" ({bad.size} joints in all)" if bad.size > 1 else ""))
    if velocity is None:
        return None
    qd = np.abs(np.asarray(velocity, dtype=np.float64))
    bound = velocity_factor * limits.max_velocity
    bad = np.flatnonzero(qd > bound)
    if bad.size:
        i = int(bad[0])
        return (f"joint {limits.names[i]} reported moving at {qd[i]:.6g}, above {velocity_factor:g} x its "
                f"max_velocity ({bound[i]:g})" + (f" ({bad.size} joints in all)" if bad.size > 1 else ""))
    return None


@dataclass
class SafetyEvent:
    tick: int
    kind: str  # nonfinite | bad_shape | position_limit | starved | stale_observation | invalid_observation
    #            | implausible_joint_state | dead_inference | inference_timeout | inference_failing | estop
    detail: str


@dataclass
class SafetyFilter:
    """Turns candidate actions (or None) into commands that respect `limits`; see module docstring."""

    limits: JointLimits
    dt: float
    max_events: int = 1000
    events: deque[SafetyEvent] = field(init=False)

    def __post_init__(self) -> None:
        if not (self.dt > 0 and np.isfinite(self.dt)):
            raise ValueError(f"dt must be positive and finite, got {self.dt}")
        self.events = deque(maxlen=self.max_events)
        self._q: np.ndarray | None = None
        self._v = np.zeros(len(self.limits.names))
        self._estop: str | None = None
        self._holding = False
        self._last_kind: str | None = None
        self._last_detail = ""
        self.n_violations = 0

    @property
    def initialised(self) -> bool:
        return self._q is not None

    @property
    def holding(self) -> bool:
        return self._holding

    @property
    def hold_kind(self) -> str | None:
        """Why the robot holds this tick (None while it follows the actions)."""
        return self._last_kind if self._holding else None

    @property
    def hold_detail(self) -> str:
        """What the current hold is about (the detail of its latest tick; "" while following)."""
        return self._last_detail if self._holding else ""

    @property
    def estopped(self) -> bool:
        return self._estop is not None

    @property
    def at_rest(self) -> bool:
        """The last command moved nothing: the filter has braked to a stop (or never started)."""
        return self._q is None or not np.any(self._v)

    @property
    def last_command(self) -> np.ndarray | None:
        return None if self._q is None else self._q.copy()

    def reset(self, position: np.ndarray) -> None:
        """Start from the robot's measured position, at rest. Refuses a position outside the limits."""
        q = np.asarray(position, dtype=np.float64)
        if q.shape != self.limits.lower.shape or not np.all(np.isfinite(q)):
            raise ValueError(f"initial position must be finite with shape {self.limits.lower.shape}, got {q}")
        if np.any(q < self.limits.lower) or np.any(q > self.limits.upper):
            raise ValueError(f"initial position {q} is outside the joint limits "
                             f"[{self.limits.lower}, {self.limits.upper}]; move the robot inside first")
        self._q, self._v = q.copy(), np.zeros_like(q)

    def emergency_stop(self, reason: str, tick: int = -1) -> None:
        self._estop = reason
        self._record(tick, "estop", reason)

    def clear_emergency_stop(self) -> None:
        self._estop = None

    def step(self, candidate: np.ndarray | None, tick: int, hold_reason: tuple[str, str] | None = None) -> np.ndarray:
        """Return the command for this tick. `hold_reason` = (kind, detail) forces a hold."""
        if self._q is None:
            raise RuntimeError("SafetyFilter.step before reset(position): the robot's position is unknown")
        reason = hold_reason
        target = None
        if self._estop is not None:
            reason = ("estop", self._estop)
        elif reason is None:
            target, reason = self._validate(candidate)
        if reason is not None:
            self._holding = True
            if reason[0] != self._last_kind:  # log once per episode of a kind, not every tick
                self._record(tick, *reason)
            self._last_kind, self._last_detail = reason
            v_des = np.zeros_like(self._q)
        else:
            self._holding = False
            self._last_kind = None
            v_des = (target - self._q) / self.dt
        return self._integrate(v_des, target)

    def preview(self, actions: np.ndarray) -> np.ndarray:
        """Commands the filter would emit for the future `actions` [N, A], without changing its state
        or logging; stops at the first action it would reject (a trajectory never carries a bad point)."""
        if self._q is None:
            raise RuntimeError("SafetyFilter.preview before reset(position)")
        if self._holding or self._estop is not None:
            return np.zeros((0, self._q.size))
        q, v = self._q.copy(), self._v.copy()
        out = []
        try:
            for a in np.asarray(actions):
                target, reason = self._validate(a)
                if reason is not None:
                    break
                out.append(self._integrate((target - self._q) / self.dt, target))
        finally:
            self._q, self._v = q, v
        return np.stack(out) if out else np.zeros((0, q.size))

    def valid_head(self, actions: np.ndarray) -> int:
        """How many leading `actions` [N, A] pass the per-action checks (finite, inside the position
        limits); motion limits are not part of it (they shape commands, they reject nothing)."""
        a = np.asarray(actions, dtype=np.float64)
        ok = np.all(np.isfinite(a) & (a >= self.limits.lower) & (a <= self.limits.upper), axis=1)
        return len(a) if ok.all() else int(np.argmin(ok))

    def _validate(self, candidate: np.ndarray | None) -> tuple[np.ndarray | None, tuple[str, str] | None]:
        if candidate is None:
            return None, ("starved", "no action for this tick")
        a = np.asarray(candidate)
        if a.shape != self._q.shape or a.dtype.kind not in "fiu":
            return None, ("bad_shape", f"action shape {a.shape} dtype {a.dtype}, expected {self._q.shape}")
        a = a.astype(np.float64)
        if not np.all(np.isfinite(a)):
            return None, ("nonfinite", f"action {a}")
        out = (a < self.limits.lower) | (a > self.limits.upper)
        if np.any(out):
            joints = [self.limits.names[i] for i in np.flatnonzero(out)]
            return None, ("position_limit", f"joints {joints} at {a[out]} outside limits")
        return a, None

    def _integrate(self, v_des: np.ndarray, target: np.ndarray | None) -> np.ndarray:
        lim, dt, q, v = self.limits, self.dt, self._q, self._v
        amax, vmax = lim.max_acceleration, lim.max_velocity
        if target is not None:
            # Approach the target no faster than we could stop on it: avoids overshoot.
            err = target - q
            v_des = np.sign(err) * np.minimum(np.abs(err) / dt, self._braking_speed(np.abs(err)))
        v_new = np.clip(v_des, v - amax * dt, v + amax * dt)
        v_new = np.clip(v_new, -vmax, vmax)
        # Never faster than what still stops before the position limit.
        v_new = np.clip(v_new, -self._braking_speed(q - lim.lower), self._braking_speed(lim.upper - q))
        q_new = np.clip(q + v_new * dt, lim.lower, lim.upper)
        self._v = (q_new - q) / dt
        self._q = q_new
        return q_new.copy()

    def _braking_speed(self, distance: np.ndarray) -> np.ndarray:
        """Largest speed v from which braking by a*dt per tick (v, v - a dt, ...) covers <= `distance`.

        Exact for the discrete integrator: with m = floor(v / (a dt)) the distance is
        dt * ((m + 1) v - a dt m (m + 1) / 2), piecewise linear and increasing in v; invert it.
        """
        a = self.limits.max_acceleration
        a_dt, dt = a * self.dt, self.dt
        d = np.maximum(distance, 0.0)
        approx = np.sqrt(2 * a * d)  # continuous-time stopping speed, within one a*dt of the answer
        m0 = np.floor(approx / a_dt)
        best = np.zeros_like(d)
        for shift in (-1.0, 0.0, 1.0):
            m = np.maximum(m0 + shift, 0.0)
            v = (d / dt + a_dt * m * (m + 1) / 2) / (m + 1)
            ok = (v >= m * a_dt - 1e-12) & (v <= (m + 1) * a_dt + 1e-12)
            best = np.where(ok, np.maximum(best, v), best)
        return best

    def _record(self, tick: int, kind: str, detail: str) -> None:
        self.n_violations += kind != "starved"
        self.events.append(SafetyEvent(tick, kind, detail))
        # An empty queue is routine in `sync` mode; everything else is a real violation.
        log.log(logging.DEBUG if kind == "starved" else logging.WARNING,
                "safety hold at tick %d: %s (%s)", tick, kind, detail)
