"""The bridge publishes and executes through the same perturbations as `vla eval` (vla.perturb), driven
in-process as in test_bridge_bound.py: the node is built on a private ROS context, its threads are not
started, and the test calls the tick itself."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from std_msgs.msg import Float64MultiArray  # noqa: E402

from real.ros.bridge_node import BridgeConfig, BridgeNode  # noqa: E402
from tests.real.ros.helpers import in_process_bridge  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(300)]


@pytest.fixture
def bridge() -> Iterator[BridgeNode]:
    with in_process_bridge(cameras=[], image_size=16, perturb="pose_bias:5,action_latency:2") as b:
        yield b


def test_published_poses_carry_the_offset_and_commands_arrive_two_ticks_late(bridge: BridgeNode) -> None:
    sent: list[np.ndarray] = []
    bridge.pub_objects.publish = lambda msg: sent.append(
        np.array([[p.position.x, p.position.y, p.position.z] for p in msg.poses]))
    applied: list[np.ndarray] = []
    inner = bridge.env.step_joints

    def step_joints(q_arm, finger):
        applied.append(np.asarray(q_arm, np.float64).copy())
        return inner(q_arm, finger)

    bridge.env.step_joints = step_joints
    t0 = time.monotonic()
    bridge._tick(t0)
    truth = bridge.env.object_poses()[:, :3]
    offset = sent[-1] - truth
    np.testing.assert_allclose(np.linalg.norm(offset, axis=1), 0.005, atol=1e-9)  # 5 mm, every object alike
    home = applied[-1].copy()
    target = home + 0.05
    bridge._on_forward(Float64MultiArray(data=[*map(float, target), 0.02]))
    for k in range(1, 5):
        bridge._tick(t0 + k * bridge.period)
    moved = [float(np.abs(a - home).max()) for a in applied[1:]]
    assert moved[0] < 1e-9 and moved[1] < 1e-9  # two ticks late: the motors still hold
    assert moved[2] > 0.04  # then the command arrives


@pytest.mark.parametrize("spec, kw, match", [
    ("blur:1", {}, "need cameras"),
    ("pose_noise:1", {"objects_topic": None}, "need published object poses"),
])
def test_a_perturbation_the_bridge_cannot_apply_is_one_clear_error(spec: str, kw: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match), in_process_bridge(cameras=[], image_size=16, perturb=spec, **kw):
        pass


def test_an_unknown_perturbation_is_refused_with_the_close_name() -> None:
    with pytest.raises(ValueError, match="did you mean 'pose_noise'"):
        BridgeConfig(perturb="pose_nois:1")
