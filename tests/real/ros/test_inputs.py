"""`RobotInputs`: the one boundary every arm-reading node uses (policy node, session over ROS)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip("rclpy")
from sensor_msgs.msg import Image, JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from real.config import DeployConfig, deploy_config_from_dict, load_deploy_config  # noqa: E402
from real.ros.inputs import RobotInputs, Snapshot  # noqa: E402

pytestmark = [pytest.mark.ros]
ROOT = Path(__file__).resolve().parents[3]


def test_snapshot_names_what_is_stale() -> None:
    s = Snapshot(q=np.zeros(2), qd=None, q_time=10.0, images={"front": np.zeros(1)}, image_times={"front": 9.0})
    names = ["joints", "front", "wrist"]
    assert s.stale(names, now=10.1, max_age_s=0.5) == ["front", "wrist"]  # too old / never received
    assert s.stale(names[:1], now=10.1, max_age_s=0.5) == []
    assert s.stale(names[:1], now=10.1, max_age_s=0.5, since=10.0) == ["joints"]  # nothing newer than since


@pytest.fixture
def inputs(domain_id: int):
    cfg: DeployConfig = load_deploy_config(ROOT / "configs/deploy/native_arm.yaml")
    ctx = rclpy.context.Context()
    rclpy.init(context=ctx, domain_id=domain_id)
    node = rclpy.create_node("inputs_test", context=ctx)
    created: list[str] = []
    received: list[float] = []

    def add(kind: str, *args):
        created.append(f"{kind} {args[1]}")
        return getattr(node, f"create_{kind}")(*args)

    now = iter(np.arange(1.0, 100.0, 0.5))
    r = RobotInputs(cfg, node, add, lambda: float(next(now)), lambda t, q: received.append(t))
    yield cfg, node, r, created, received
    node.destroy_node()
    rclpy.try_shutdown(context=ctx)


def joint_state(node, names, q) -> JointState:
    msg = JointState(name=list(names), position=[float(x) for x in q])
    msg.header.stamp = node.get_clock().now().to_msg()
    return msg


def test_valid_messages_are_kept_and_bad_ones_counted_by_kind(inputs) -> None:
    cfg, node, r, created, received = inputs
    names = list(cfg.limits.names)
    assert created[0] == f"subscription {cfg.joint_states_topic}" and len(created) == 2 + len(cfg.cameras)
    assert r.snapshot().q is None and r.snapshot().instruction == cfg.default_instruction
    q = np.linspace(-0.1, 0.1, len(names))
    r._on_joint_state(joint_state(node, names[::-1], q[::-1]))  # by name, any order
    np.testing.assert_allclose(r.snapshot().q, q)
    assert received == [r.snapshot().q_time]
    stale = joint_state(node, names, q + 1)
    stale.header.stamp.sec -= 10  # a replayed message
    r._on_joint_state(stale)
    r._on_joint_state(joint_state(node, names[:-1], q[:-1]))  # a joint missing
    r._on_joint_state(joint_state(node, names, [np.nan] * len(names)))
    np.testing.assert_allclose(r.snapshot().q, q)  # nothing bad was kept
    assert r.rejected["joint_states"] == 3 and r.rejected["stamp"] == 1 and len(received) == 1
    cam = cfg.cameras[0]
    img = Image(height=cam.height, width=cam.width, encoding="rgb8", step=3 * cam.width,
                data=bytes(range(256)) * (3 * cam.height * cam.width // 256) + bytes(3 * cam.height * cam.width % 256))
    img.header.stamp = node.get_clock().now().to_msg()
    r._on_image(img, cam)
    img.height += 1  # a size the config does not say
    r._on_image(img, cam)
    assert r.snapshot().images[cam.name].shape == (cam.height, cam.width, 3) and r.rejected["image"] == 1
    r._on_instruction(String(data="sort the cubes"))
    r._on_instruction(String(data=" \t"))
    assert r.snapshot().instruction == "sort the cubes" and r.rejected["instruction"] == 1
    assert r.n_rejected == 5  # the stamp counter is a sub-count, not added twice


def test_the_robots_first_instruction_is_awaited_for_at_most_instruction_wait_s(inputs) -> None:
    cfg, _, r, _, _ = inputs
    assert cfg.instruction_wait_s > 0  # the native arm's bridge publishes its instruction once a second
    # the fake clock advances 0.5 s per reading: waiting while less than instruction_wait_s has passed
    waited = 0
    while r.awaiting_instruction():
        waited += 1
        assert not r.snapshot().instruction_received and r.snapshot().instruction == cfg.default_instruction
    assert 0 < waited <= cfg.instruction_wait_s / 0.5  # then the default is used
    cfg.instruction_wait_s = 1e9
    assert r.awaiting_instruction()
    r._on_instruction(String(data=" "))  # a rejected instruction does not end the wait
    assert r.awaiting_instruction()
    r._on_instruction(String(data="put the blue cube in the left zone"))
    assert not r.awaiting_instruction()
    s = r.snapshot()
    assert s.instruction_received and s.instruction == "put the blue cube in the left zone"


def test_instruction_wait_s_is_validated() -> None:
    raw = yaml.safe_load((ROOT / "configs/deploy/native_arm.yaml").read_text())
    for bad in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="instruction_wait_s must be >= 0"):
            deploy_config_from_dict({**raw, "instruction_wait_s": bad})


def test_object_poses_are_read_only_with_an_objects_section_and_validated(domain_id: int) -> None:
    from geometry_msgs.msg import PoseArray

    from real.ros.bridge_node import pose_array

    raw = yaml.safe_load((ROOT / "configs/deploy/native_arm.yaml").read_text())
    with pytest.raises(ValueError, match=r"objects: unknown keys \['cout'\]"):
        deploy_config_from_dict({**raw, "objects": {"cout": 2}})
    with pytest.raises(ValueError, match=r"objects\.count must be >= 1"):
        deploy_config_from_dict({**raw, "objects": {"count": 0}})
    cfg = deploy_config_from_dict({**raw, "objects": {"topic": "/poses", "count": 2}})
    ctx = rclpy.context.Context()
    rclpy.init(context=ctx, domain_id=domain_id)
    node = rclpy.create_node("objects_test", context=ctx)
    created: list[str] = []

    def add(kind: str, *args):
        created.append(f"{kind} {args[1]}")
        return getattr(node, f"create_{kind}")(*args)

    clock = iter(np.arange(1.0, 100.0, 0.5))
    try:
        r = RobotInputs(cfg, node, add, lambda: float(next(clock)))
        assert "subscription /poses" in created and r.snapshot().objects is None
        assert r.snapshot().stale(["objects"], now=2.0, max_age_s=1.0) == ["objects"]  # never received
        poses = np.array([[0.1, 0.0, 0.02, 0.0, 0.0, 0.0, 1.0], [0.3, 0.1, 0.0, 0.0, 0.0, 0.0, 1.0]])
        def now():  # a fresh stamp object per message (the test edits some)
            return node.get_clock().now().to_msg()

        r._on_objects(pose_array(poses, now()))
        s = r.snapshot()
        np.testing.assert_allclose(s.objects, poses)
        assert s.stale(["objects"], now=s.objects_time + 0.1, max_age_s=1.0) == []
        bad = [pose_array(poses[:1], now()), pose_array(np.where(np.eye(2, 7, 2) > 0, np.inf, poses), now())]
        old = pose_array(poses + 1, now())
        old.header.stamp.sec -= 10  # a replayed message
        wrong_frame = pose_array(poses + 1, now())
        wrong_frame.header.frame_id = "camera"
        empty: PoseArray = PoseArray()  # unstamped, no poses
        for msg in (*bad, old, wrong_frame, empty):
            r._on_objects(msg)
        np.testing.assert_allclose(r.snapshot().objects, poses)  # nothing bad was kept
        assert r.rejected["objects"] == 5 and r.rejected["stamp"] == 2 and r.n_rejected == 5
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=ctx)
    assert deploy_config_from_dict(raw).objects is None  # the image policy's config reads no poses
