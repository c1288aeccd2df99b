import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from real.safety import JointLimits, SafetyFilter
from real.testing import SyntheticPolicy
from tests.real.helpers import DT, A, limits, make

URDF = """<robot name="arm">
  <joint name="shoulder" type="revolute"><limit lower="-1.5" upper="1.5" velocity="2.0" effort="10"/></joint>
  <joint name="elbow" type="revolute"><limit lower="-2.0" upper="0.5" velocity="3.0" effort="10"/></joint>
  <joint name="fixed_mount" type="fixed"/>
</robot>"""


def check_commands(cmds: np.ndarray, lim: JointLimits, dt: float, q0: np.ndarray) -> None:
    """The safety layer's guarantees on an emitted command sequence."""
    assert np.all(np.isfinite(cmds))
    assert np.all(cmds >= lim.lower) and np.all(cmds <= lim.upper)
    q = np.vstack([q0, q0, cmds])  # at rest before the first command
    v = np.diff(q, axis=0) / dt
    assert np.all(np.abs(v) <= lim.max_velocity * (1 + 1e-9) + 1e-9)
    acc = np.diff(v, axis=0) / dt
    assert np.all(np.abs(acc) <= lim.max_acceleration * (1 + 1e-6) + 1e-6)


def test_limits_from_urdf_and_config():
    lim = JointLimits.from_urdf(URDF, ["elbow", "shoulder"], max_acceleration=5.0)
    np.testing.assert_array_equal(lim.lower, [-2.0, -1.5])
    np.testing.assert_array_equal(lim.max_velocity, [3.0, 2.0])
    np.testing.assert_array_equal(lim.max_acceleration, [5.0, 5.0])
    with pytest.raises(ValueError, match="no joint named 'wrist'"):
        JointLimits.from_urdf(URDF, ["wrist"], 1.0)
    with pytest.raises(ValueError, match="no <limit"):
        JointLimits.from_urdf(URDF, ["fixed_mount"], 1.0)
    cfg = {"names": ["a", "b"], "lower": [-1, -1], "upper": [1, 1], "max_velocity": [1, 1],
           "max_acceleration": [2, 2]}
    assert JointLimits.from_config(cfg).names == ("a", "b")
    with pytest.raises(ValueError, match="lacks"):
        JointLimits.from_config({"names": ["a"]})
    with pytest.raises(ValueError, match="lower must be < upper"):
        JointLimits.from_config({**cfg, "lower": [1, 1]})
    with pytest.raises(ValueError, match="shape"):
        JointLimits.from_config({**cfg, "upper": [1, 1, 1]})


def test_reset_refuses_unknown_or_out_of_limit_position():
    f = SafetyFilter(limits(2), DT)
    with pytest.raises(RuntimeError, match="reset"):
        f.step(np.zeros(2), 0)
    with pytest.raises(ValueError, match="outside the joint limits"):
        f.reset(np.array([0.0, 5.0]))
    with pytest.raises(ValueError, match="finite"):
        f.reset(np.array([0.0, np.nan]))


@pytest.mark.parametrize(("bad", "kind"), [(np.array([np.nan, 0.0]), "nonfinite"),
                                           (np.array([np.inf, 0.0]), "nonfinite"),
                                           (np.array([0.0, 2.5]), "position_limit"),
                                           (np.zeros(3), "bad_shape"), (None, "starved")])
def test_bad_action_holds_and_is_logged(bad, kind, caplog):
    f = SafetyFilter(limits(2), DT)
    f.reset(np.zeros(2))
    for t in range(10):  # get moving
        f.step(np.array([0.05 * t, 0.0]), t)
    with caplog.at_level(logging.DEBUG, logger="real.safety"):
        cmds = np.stack([f.step(bad, 10 + t) for t in range(20)])
    assert f.holding and f.hold_kind == kind
    assert [e.kind for e in f.events] == [kind]  # logged once per episode of a kind, not per tick
    assert kind in caplog.text
    v = np.diff(cmds[:, 0]) / DT
    assert np.all(np.diff(v) <= 1e-9) and abs(v[-1]) < 1e-9  # decelerates monotonically to rest
    assert f.step(np.array([cmds[-1, 0], 0.0]), 40) is not None and not f.holding  # recovers


def test_emergency_stop_latches_until_cleared():
    f = SafetyFilter(limits(2), DT)
    f.reset(np.zeros(2))
    f.emergency_stop("operator pressed stop", tick=0)
    for t in range(30):
        cmd = f.step(np.array([0.5, 0.5]), t)
    np.testing.assert_allclose(cmd, 0.0)
    assert f.estopped and f.hold_kind == "estop"
    f.clear_emergency_stop()
    for t in range(100):
        cmd = f.step(np.array([0.5, 0.5]), 30 + t)
    np.testing.assert_allclose(cmd, 0.5, atol=1e-9)


def test_a_hold_brakes_to_rest_within_the_acceleration_limit():
    """at_rest: what the policy node's pause waits for before it goes silent."""
    f = SafetyFilter(limits(2), DT)
    assert f.at_rest  # not started: nothing moves
    f.reset(np.zeros(2))
    assert f.at_rest
    for t in range(5):  # on the way: 0.25 s into a 1.5 rad move at 3 rad/s
        f.step(np.array([1.5, -1.5]), t)
    assert not f.at_rest
    braking = []
    for t in range(5, 200):
        braking.append(f.step(None, t, ("paused", "test")))
        if f.at_rest:
            break
    assert f.at_rest and len(braking) > 2  # it took ticks to stop, not one
    speeds = np.abs(np.diff(np.stack(braking), axis=0)) / DT
    assert np.all(np.diff(speeds, axis=0) <= 30.0 * DT + 1e-9)  # never faster again while braking
    rest = f.last_command
    np.testing.assert_array_equal(f.step(None, t + 1, ("paused", "test")), rest)  # at rest it stays


def test_far_target_is_approached_within_velocity_and_acceleration_limits():
    lim = limits(2, vel=1.0, acc=4.0)
    f = SafetyFilter(lim, DT)
    f.reset(np.zeros(2))
    cmds = np.stack([f.step(np.array([1.9, -1.9]), t) for t in range(200)])
    check_commands(cmds, lim, DT, np.zeros(2))
    np.testing.assert_allclose(cmds[-1], [1.9, -1.9], atol=1e-9)


action = st.one_of(
    st.none(),
    st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=3, max_size=3),
    st.lists(st.floats(-2.5, 2.5), min_size=3, max_size=3),
    st.lists(st.floats(-1.0, 1.0), min_size=2, max_size=4),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(action, min_size=1, max_size=60), st.booleans())
def test_fuzz_no_emitted_command_is_nonfinite_or_out_of_limits(actions, estop):
    lim = JointLimits(("a", "b", "c"), np.array([-1.0, -2.0, 0.0]), np.array([1.0, 0.5, 2.0]),
                      np.array([1.0, 2.0, 0.5]), np.array([5.0, 10.0, 3.0]))
    f = SafetyFilter(lim, DT)
    q0 = np.array([0.9, -1.9, 0.1])
    f.reset(q0)
    cmds = []
    for t, a in enumerate(actions):
        if estop and t == len(actions) // 2:
            f.emergency_stop("fuzz", t)
        cmds.append(f.step(None if a is None else np.asarray(a, dtype=np.float64), t))
    check_commands(np.stack(cmds), lim, DT, q0)


class Garbage(SyntheticPolicy):
    """Every few chunks: NaN, inf, huge or out-of-limit values inside an otherwise smooth chunk."""

    def sample_chunk(self, obs_batch, prefix=None, guidance=None):
        out = super().sample_chunk(obs_batch, prefix, guidance)
        rng = np.random.default_rng(len(self.calls))
        mask = rng.random(out.shape) < 0.05
        out[mask] = rng.choice([np.nan, np.inf, -np.inf, 1e30, 2.1, -2.1], size=mask.sum())
        return out


@pytest.mark.parametrize("mode", ["sync", "naive_async", "aligned", "rtc"])
def test_fuzz_executor_never_sends_invalid_commands(mode):
    pol = Garbage(A, 20, DT, chunk_offset=0.5, radius=1.8)
    ex, _, _, robot, _ = make(mode, delay_ticks=3, policy=pol)
    ex.run(400)
    cmds = np.stack(robot.commands)
    lim = ex.safety.limits
    check_commands(cmds, lim, DT, SyntheticPolicy(A, 20, DT).curve(0.0))
    # invalid actions never reach the queue (a chunk is cut before its first one, see
    # ChunkExecutor._valid_head); the safety layer's own rejections are tested above
    assert ex.n_truncated > 0


def test_preview_is_side_effect_free_and_stops_at_a_bad_action():
    lim = limits(2, vel=1.0, acc=10.0)
    f = SafetyFilter(lim, DT)
    f.reset(np.zeros(2))
    f.step(np.array([0.02, 0.0]), 0)
    future = np.array([[0.04, 0.0], [0.06, 0.0], [np.nan, 0.0], [0.1, 0.0]])
    before = f.last_command
    prev = f.preview(future)
    assert prev.shape == (2, 2) and len(f.events) == 0
    np.testing.assert_array_equal(f.last_command, before)
    np.testing.assert_allclose(prev, [f.step(future[0], 1), f.step(future[1], 2)])


def test_joint_states_a_real_arm_cannot_be_in_are_named():
    """Defect 4's check: finite, but past a joint's range (beyond the tolerance) or faster than a servo runs."""
    from real.safety import implausible_joint_state

    lim = JointLimits(("a", "b"), np.array([-2.9, -1.0]), np.array([2.9, 1.0]), np.array([2.0, 3.0]),
                      np.array([10.0, 10.0]))
    assert implausible_joint_state(lim, np.array([2.94, -1.04]), np.array([5.9, -8.9]), 0.05, 3.0) is None
    assert implausible_joint_state(lim, np.array([100.0, 0.0]), None, 0.05, 3.0) == (
        "joint a reported at 100, outside its range [-2.9, 2.9] by more than 0.05")
    assert "2 joints in all" in implausible_joint_state(lim, np.array([3.0, -1.1]), None, 0.05, 3.0)
    assert implausible_joint_state(lim, np.zeros(2), np.array([0.0, -1e30]), 0.05, 3.0) == (
        "joint b reported moving at 1e+30, above 3 x its max_velocity (9)")
