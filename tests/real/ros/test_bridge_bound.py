"""The bridge's per-tick bound, driven in-process: the bridge node is built on a
private ROS context but its threads are not started, so the test calls the command callbacks and the
physics tick itself with its own clock and records every target handed to the motors.

Property: whatever arrives (forward commands or trajectories, malformed or not, after any silence and
with any `time_from_start`), every motor target is finite, inside the joint ranges and at most
`max_step` from the one before; and valid commands afterwards are followed (never a lock-out).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")
from builtin_interfaces.msg import Duration  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from real.joint_vla import JOINT_NAMES  # noqa: E402
from real.ros.bridge_node import BridgeNode  # noqa: E402
from tests.real.ros.helpers import in_process_bridge, record_case  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(300)]

MAX_STEP = 0.5


class Motors:
    """Wraps the env's joint-position interface and keeps every target the bridge applied."""

    def __init__(self, bridge: BridgeNode) -> None:
        self.targets: list[np.ndarray] = []
        inner = bridge.env.step_joints

        def step_joints(q_arm, finger):
            self.targets.append(np.append(np.asarray(q_arm, dtype=np.float64), float(finger)))
            return inner(q_arm, finger)

        bridge.env.step_joints = step_joints


@pytest.fixture(scope="module")
def bridge():
    with in_process_bridge(cameras=[], image_size=16, max_step=MAX_STEP) as b:
        b.motors = Motors(b)
        yield b


class Driver:
    """The bridge's clock for one scenario: tick k runs at t0 + k * period."""

    def __init__(self, b: BridgeNode) -> None:
        with b._lock:
            b._reset_env()
        self.b, self.t0, self.k = b, time.monotonic(), 0
        self.n0 = len(b.motors.targets)
        self.start = b.applied.copy()

    @property
    def now(self) -> float:
        return self.t0 + self.k * self.b.period

    def tick(self, n: int = 1) -> None:
        for _ in range(n):
            self.k += 1
            self.b._tick(self.now)

    def forward(self, values) -> None:
        self.b._on_forward(Float64MultiArray(data=[float(x) for x in values]))

    def trajectory(self, names, points, times) -> None:
        msg = JointTrajectory(joint_names=list(names))
        for p, t in zip(points, times, strict=True):
            pt = JointTrajectoryPoint(positions=[float(x) for x in p])
            pt.time_from_start = Duration(sec=int(t // 1), nanosec=round((t % 1) * 1e9) % 1_000_000_000)
            msg.points.append(pt)
        self.b._on_trajectory(msg, now=self.now)

    def targets(self) -> np.ndarray:
        return np.stack([self.start, *self.b.motors.targets[self.n0:]])

    def check_bound(self) -> None:
        t = self.targets()
        assert np.all(np.isfinite(t))
        assert np.all(t >= self.b.lower - 1e-12) and np.all(t <= self.b.upper + 1e-12)
        steps = np.abs(np.diff(t[:, :7], axis=0))
        assert steps.max(initial=0.0) <= MAX_STEP + 1e-9, f"a tick moved the target {steps.max():.3f} rad"


def test_far_target_after_silence_moves_one_bound_per_tick(bridge) -> None:
    """The issue's case: 2.5 rad after 300 ms idle passed in one tick (the allowance grew with idle time)."""
    d = Driver(bridge)
    home = d.start.copy()
    d.forward(home)
    d.tick()
    time.sleep(0.3)  # the old check read the wall clock since the last accepted command
    d.k += 6  # and the bridge's own clock moves on too
    far = home.copy()
    far[0] = home[0] + 2.5 if home[0] + 2.5 <= bridge.upper[0] else home[0] - 2.5
    d.forward(far)
    d.tick(8)
    d.check_bound()
    assert bridge.counts["accepted"] == 2 and bridge.counts["limited_ticks"] >= 4
    np.testing.assert_allclose(d.targets()[-1][:7], far[:7])  # followed at the bound's speed, not refused


def test_trajectory_points_1ms_apart_cannot_chain_a_jump(bridge) -> None:
    """Five points 1 ms apart, 0.45 rad each: the old check took them as one control period each."""
    d = Driver(bridge)
    home = d.start.copy()
    pts = []
    for i in range(1, 6):
        p = home.copy()
        p[0] = home[0] + math.copysign(0.45 * i, -home[0] or 1.0)
        pts.append(p)
    d.trajectory(JOINT_NAMES, pts, [0.001 * i for i in range(1, 6)])
    d.tick(3)
    d.check_bound()
    assert bridge.counts["rejected_speed"] == 1 and bridge.counts["accepted"] == 0


def test_lost_messages_never_lock_the_arm_out(bridge) -> None:
    """A stream at 0.2 rad per tick with every third message lost (the past
    "jump check" bug): the arm keeps following and catches up once the stream stops."""
    d = Driver(bridge)
    q = d.start.copy()
    direction = -1.0 if q[0] > 0 else 1.0
    sent = q
    for i in range(12):
        q = q.copy()
        q[0] += direction * 0.2
        if i % 3 != 2:
            d.forward(q)
            sent = q
        d.tick()
    d.tick(3)
    d.check_bound()
    assert bridge.counts["accepted"] == 8 and sum(v for k, v in bridge.counts.items() if k.startswith("rejected_")) == 0
    np.testing.assert_allclose(d.targets()[-1][:7], sent[:7])


# ---- property-based: malformed and hostile command streams -----------------------------------------
FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                   st.floats(-3.5, 3.5), st.sampled_from([0.0, 1e308, -1e308, 3.5e38, 5e-324]))


def in_range(b: BridgeNode):
    return st.tuples(*[st.floats(float(lo), float(hi)) for lo, hi in zip(b.lower, b.upper, strict=True)])


def ops(b: BridgeNode):
    vec = st.one_of(in_range(b), st.lists(FLOATS, min_size=0, max_size=10))
    forward = st.tuples(st.just("forward"), vec)
    names = st.one_of(st.just(list(JOINT_NAMES)), st.permutations(list(JOINT_NAMES)),
                      st.lists(st.sampled_from([*JOINT_NAMES, "x"]), max_size=9))
    times = st.lists(st.one_of(st.floats(0, 0.5), st.sampled_from([0.0, 1e-9, 0.001, 0.05])), min_size=0, max_size=6)
    traj = st.tuples(st.just("trajectory"), names, st.lists(vec, min_size=0, max_size=6), times)
    idle = st.tuples(st.just("idle"), st.integers(0, 12))
    return st.lists(st.one_of(forward, traj, idle), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(data=st.data())
def test_hostile_command_streams_keep_the_per_tick_bound(bridge, data) -> None:
    d = Driver(bridge)
    seq = data.draw(ops(bridge))
    for op in seq:
        before = dict(bridge.counts)
        if op[0] == "forward":
            d.forward(op[1])
        elif op[0] == "trajectory":
            _, names, points, times = op
            n = min(len(points), len(times))
            order = [list(JOINT_NAMES).index(x) if x in JOINT_NAMES else 0 for x in names]
            pts = [[p[i] if i < len(p) else 0.0 for i in order] for p in points[:n]]
            d.trajectory(names, pts, times[:n])
        else:
            d.tick(op[1])
        d.tick()
        changed = [k for k in bridge.counts if bridge.counts[k] != before.get(k) and k != "received"]
        outcome = ",".join(sorted(k for k in changed if k.startswith(("rejected_", "accepted")))) or "idle"
        record_case("bridge_command", op, outcome)
    d.check_bound()
    # whatever came before, a valid command is followed: the arm reaches it within the bound's ticks
    goal = np.clip(d.start + 0.1, bridge.lower, bridge.upper)
    d.forward(goal)
    d.tick(int(np.ceil(np.abs(goal - d.targets()[-1])[:7].max() / MAX_STEP)) + 1)
    d.check_bound()
    np.testing.assert_allclose(d.targets()[-1], goal, atol=1e-12)
