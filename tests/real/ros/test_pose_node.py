"""The pose node over real DDS: the MuJoCo bridge's camera images in, the estimator's PoseArray out."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from sensor_msgs.msg import Image  # noqa: E402

from real.joint_vla import ArmKinematics  # noqa: E402
from real.ros.pose_node import PoseNode, PoseNodeConfig  # noqa: E402
from tests.real.ros.helpers import in_process_bridge  # noqa: E402
from tests.vla.perception.helpers import CAMERAS, debug_estimator  # noqa: E402
from vla.perception.estimator import PoseEstimator  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def estimator(tmp_path_factory: pytest.TempPathFactory) -> str:
    return debug_estimator(tmp_path_factory.mktemp("est"))  # the default: it reads the arm's state


@pytest.fixture(scope="module")
def images_only(tmp_path_factory: pytest.TempPathFactory) -> str:
    return debug_estimator(tmp_path_factory.mktemp("est"), 24, "arm_state=false", "relative=none")


def _send(node: PoseNode, frames: dict[str, np.ndarray], sec: int) -> None:
    """Each camera's 24x24 frame to the node as the bridge's Image message, stamped `sec`."""
    from builtin_interfaces.msg import Time

    for c, img in frames.items():
        msg = Image(height=24, width=24, encoding="rgb8", step=72, data=img.tobytes())
        msg.header.stamp = Time(sec=sec, nanosec=0)
        node._on_image(msg, c)


@contextmanager
def _offline_node(cfg: PoseNodeConfig, domain_id: int) -> Iterator[tuple[PoseNode, list]]:
    """A pose node on its own rclpy context, not spun: the test feeds it and ticks it, and its publisher
    appends every PoseArray to the list instead of sending it."""
    ctx = rclpy.context.Context()
    rclpy.init(context=ctx, domain_id=domain_id)
    node = PoseNode(cfg, context=ctx)
    out: list = []
    node.pub.publish = out.append
    try:
        yield node, out
    finally:
        node.node.destroy_node()
        rclpy.shutdown(context=ctx)


def _wait(cond, timeout_s: float = 20.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return False


def test_poses_are_estimated_from_the_bridges_images_and_published_as_its_pose_array(estimator: str) -> None:
    with in_process_bridge(cameras=list(CAMERAS), image_size=24) as bridge:
        sent_images: list[dict[str, np.ndarray]] = []
        node = PoseNode(PoseNodeConfig(estimator=estimator), context=bridge.node.context)
        out: list = []
        node.pub.publish = out.append
        node.start()
        try:
            t0 = time.monotonic()
            for k in range(3):
                before = set(node._used.values())  # the last tick's stamps: its frames may still be all there is
                bridge._tick(t0 + k * bridge.period)
                sent_images.append({c: bridge.obs["images"][c].copy() for c in CAMERAS})
                q = np.clip(np.append(bridge.env.arm_qpos(), bridge.env.finger_qpos().mean()), bridge.lower,
                            bridge.upper)  # as the bridge publishes it

                def estimated_from_this_tick(before: set[float] = before) -> bool:  # this tick's frames, estimated
                    stamps = {f[1] for f in node._frames.values()}
                    return (len(node._frames) == 2 and len(stamps) == 1 and stamps != before
                            and set(node._used.values()) == stamps and node.used_arm is not None
                            and node.used_arm[1] in stamps)
                assert _wait(estimated_from_this_tick), "no PoseArray from the bridge's images"
            msg = out[-1]
            assert msg.header.frame_id == "world" and len(msg.poses) == 2
            got = np.array([[p.position.x, p.position.y, p.position.z, p.orientation.x, p.orientation.y,
                             p.orientation.z, p.orientation.w] for p in msg.poses])
            arm = ArmKinematics().proprio(q)  # the hand's pose of the bridge's joint state, by the same kinematics
            np.testing.assert_allclose(node.used_arm[0], arm, atol=1e-9)
            want = PoseEstimator.load(estimator).estimate(sent_images[-1], arm)  # the same inputs, estimated here
            np.testing.assert_allclose(got, want, atol=1e-5)
            # a frame of the wrong size is dropped and counted, and estimates stop until good frames return
            n = len(out)
            bad = Image(height=10, width=10, encoding="rgb8", step=30, data=bytes(300))
            node._on_image(bad, CAMERAS[0])
            assert node.rejected["image"] == 1
            node.tick()
            assert len(out) == n  # no new frames: nothing is estimated again
        finally:
            node.stop()


def test_a_config_without_the_camera_placeholder_is_refused(estimator: str) -> None:
    with pytest.raises(ValueError, match="must contain"):
        PoseNodeConfig(estimator=estimator, camera_topic="/camera/image_raw")


def test_a_missing_estimator_is_one_clear_error(tmp_path: Path) -> None:
    from vla.policy.checkpoint import CheckpointError

    with pytest.raises(CheckpointError, match="not a pose estimator"):
        PoseEstimator.load(tmp_path)


def test_smoothing_publishes_the_zones_moving_average(images_only: str, domain_id: int) -> None:
    from vla.perception.smooth import ema_update

    est = PoseEstimator.load(images_only)
    rng = np.random.default_rng(0)
    with _offline_node(PoseNodeConfig(estimator=images_only, smoothing=0.3), domain_id) as (node, out):
        mean = None
        for k in range(3):
            frames = {c: rng.integers(0, 256, (24, 24, 3), dtype=np.uint8) for c in CAMERAS}
            _send(node, frames, 100 + k)
            node.tick()
            mean = ema_update(mean, est.estimate(frames)[1, :3], 0.3)
            zone = out[-1].poses[1].position
            np.testing.assert_allclose([zone.x, zone.y, zone.z], mean, atol=1e-5)
        assert len(out) == 3


def test_an_ensemble_folder_publishes_the_members_mean_and_reports_their_spread(
        tmp_path: Path, domain_id: int) -> None:
    from vla.perception.estimator import mean_poses, write_ensemble

    a = debug_estimator(tmp_path / "a", 24, "arm_state=false", "relative=none")
    b = debug_estimator(tmp_path / "b", 24, "arm_state=false", "relative=none", "seed=1")
    folder = write_ensemble(tmp_path / "ens", ["../a/est", "../b/est"])
    frames = {c: np.random.default_rng(2).integers(0, 256, (24, 24, 3), dtype=np.uint8) for c in CAMERAS}
    with _offline_node(PoseNodeConfig(estimator=str(folder)), domain_id) as (node, out):
        _send(node, frames, 100)
        node.tick()
        each = np.stack([PoseEstimator.load(e).estimate(frames) for e in (a, b)])
        got = np.array([[p.position.x, p.position.y, p.position.z] for p in out[0].poses])
        np.testing.assert_allclose(got, mean_poses(each)[:, :3], atol=1e-5)
        status = node.status()
        apart = 1000 * np.linalg.norm(each[0, :, :3] - each[1, :, :3], axis=1) / 2  # each member half-way off
        assert apart[0] > 0.1  # two seeds, two readings
        assert status["members"] == 2 and status["spread_mm"]["cube"] == pytest.approx(apart[0], abs=0.06)


def test_an_estimator_that_reads_the_arm_waits_for_its_joint_state(estimator: str, domain_id: int) -> None:
    """The hand's pose comes from /joint_states through the policy node's forward kinematics; frames without
    a joint state as recent are not estimated, and a bad joint state is dropped and counted."""
    from builtin_interfaces.msg import Time
    from sensor_msgs.msg import JointState

    from real.joint_vla import JOINT_NAMES, ArmKinematics
    from vla.robot.arm import HOME_QPOS

    est = PoseEstimator.load(estimator)
    frames = {c: np.random.default_rng(1).integers(0, 256, (24, 24, 3), dtype=np.uint8) for c in CAMERAS}
    with _offline_node(PoseNodeConfig(estimator=estimator), domain_id) as (node, out):
        _send(node, frames, 100)
        node.tick()
        assert out == []  # no joint state yet
        q = np.append(HOME_QPOS, 0.02)
        bad = JointState(name=list(JOINT_NAMES)[:7], position=list(q[:7]))
        node._on_joint_state(bad)
        assert node.rejected["joint_states"] == 1
        js = JointState(name=list(JOINT_NAMES), position=list(map(float, q)))
        js.header.stamp = Time(sec=99, nanosec=0)  # a second before the frames: too old for them
        node._on_joint_state(js)
        node.tick()
        assert out == []
        js.header.stamp = Time(sec=100, nanosec=10_000_000)
        node._on_joint_state(js)
        moved = JointState(name=list(JOINT_NAMES), position=list(map(float, q + 0.1)))
        moved.header.stamp = Time(sec=100, nanosec=50_000_000)  # the next tick's, in before its images
        node._on_joint_state(moved)
        node.tick()
        assert len(out) == 1 and node.status()["reads_arm"]
        assert node.used_arm[1] == pytest.approx(100.01)  # the joint state nearest the frames, not the newest
        got = np.array([[p.position.x, p.position.y, p.position.z] for p in out[0].poses])
        np.testing.assert_allclose(got, est.estimate(frames, ArmKinematics().proprio(q))[:, :3], atol=1e-5)


def test_nearest_in_time_picks_the_closest_stamp_within_the_gap() -> None:
    from real.ros.pose_node import nearest_in_time

    history = [(np.full(9, k), 10.0 + 0.05 * k) for k in range(4)]
    assert nearest_in_time(history, 10.06, 0.2)[1] == pytest.approx(10.05)
    assert nearest_in_time(history, 10.2, 0.2)[1] == pytest.approx(10.15)
    assert nearest_in_time(history, 11.0, 0.2) is None and nearest_in_time([], 10.0, 0.2) is None
