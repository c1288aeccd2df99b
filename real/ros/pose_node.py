"""Pose node: a pose estimator (vla.perception, `vla perception train`) over the robot's cameras,
publishing the object poses a state policy reads, so a deployment needs no simulator state.

It subscribes one sensor_msgs/Image per camera the estimator reads (`camera_topic`, the bridge's and a
camera driver's `/camera/<name>/image_raw`) and publishes geometry_msgs/PoseArray on `objects_topic`
(frame `world`, the order of the task's OBJECT_POSES: what the MuJoCo bridge publishes from its ground
truth and what the policy node's `objects` section reads). Each tick (`rate_hz`) with a new frame from
every camera, none older than `max_age_s` against the newest, it estimates once and publishes, stamped
with the oldest frame's stamp (the poses are as old as their oldest evidence). An estimator that reads the
arm's state (`vla perception train ... arm_state=true`) also gets the `joint_states_topic` message whose
stamp is nearest the frames' (within `max_age_s`; a joint state newer than the frames would put the hand
where it is now beside an image of where it was, and the cube estimated from the hand moves with it),
turned into the hand's pose by the same forward kinematics the policy node's joint-space adapter uses
(real.joint_vla.ArmKinematics); without one it waits. Every image and joint state is validated (encoding,
size, byte count; names, lengths, finite values) and a bad one is dropped and counted; an estimate that is
not finite is never published. Weights load from safetensors only (PoseEstimator.load checks their sha256).

Run:  python -m real.ros.pose_node --estimator runs/pose/est --domain-id 7
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

import rclpy
from geometry_msgs.msg import PoseArray
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String

from real.ros.bridge_node import pose_array
from real.ros.convert import MessageError, image_to_rgb, joint_positions, stamp_seconds
from real.ros.spinner import BackgroundSpinner, init_ros, run_node_until_stopped
from vla.perception.estimator import PoseEstimator
from vla.perception.smooth import task_smoother

log = logging.getLogger(__name__)


@dataclass
class PoseNodeConfig:
    estimator: str
    camera_topic: str = "/camera/{name}/image_raw"
    objects_topic: str = "/perception/object_poses"
    status_topic: str = "/perception/status"
    joint_states_topic: str = "/joint_states"  # read only by an estimator that reads the arm's state
    rate_hz: float = 20.0
    # frames of one estimate may be this far apart (s, by their header stamps); more waits for fresher ones
    max_age_s: float = 0.2
    # the weight of the newest estimate in the moving average of the task's static objects' positions (a
    # zone; vla.perception.smooth); 1 publishes every frame's own. With no episode boundaries on the wire
    # the average forgets: at 0.1 and 20 Hz an object moved between episodes is followed within a second
    smoothing: float = 1.0
    ros_domain_id: int | None = None

    def __post_init__(self) -> None:
        if "{name}" not in self.camera_topic:
            raise ValueError(f"camera_topic must contain '{{name}}', got {self.camera_topic!r}")
        if not self.rate_hz > 0 or not self.max_age_s > 0:
            raise ValueError(f"rate_hz and max_age_s must be > 0, got {self.rate_hz}, {self.max_age_s}")
        if not 0 < self.smoothing <= 1:
            raise ValueError(f"smoothing must be in (0, 1] (1: off), got {self.smoothing}")


ARM_HISTORY = 256  # joint states kept to pair with frames: a second at a 250 Hz driver


def nearest_in_time(history: list[tuple[np.ndarray, float]], t: float,
                    max_gap_s: float) -> tuple[np.ndarray, float] | None:
    """The (value, stamp) of `history` whose stamp is nearest `t`, or None when none is within `max_gap_s`."""
    if not history:
        return None
    best = min(history, key=lambda h: abs(h[1] - t))
    return best if abs(best[1] - t) <= max_gap_s else None


class PoseNode:
    """Owns the estimator, the rclpy node and its timer. `start()` / `stop()`."""

    def __init__(self, cfg: PoseNodeConfig, context: Any = None) -> None:
        self.cfg = cfg
        self.estimator = PoseEstimator.load(cfg.estimator)
        self.smoother = task_smoother(self.estimator.task, self.estimator.objects, cfg.smoothing)
        self.node = rclpy.create_node("pose_estimator", context=context)
        self._lock = threading.Lock()
        self._frames: dict[str, tuple[np.ndarray, float, Any]] = {}  # camera -> (image, stamp s, stamp msg)
        self._used: dict[str, float] = {}
        self.used_arm: tuple[np.ndarray, float] | None = None  # the joint state the last estimate read
        self._arms: deque[tuple[np.ndarray, float]] = deque(maxlen=ARM_HISTORY)  # (the arm's state [9], stamp s)
        self.published = 0
        self.rejected: dict[str, int] = {"image": 0, "joint_states": 0, "nonfinite": 0}
        self.pub = self.node.create_publisher(PoseArray, cfg.objects_topic, qos_profile_sensor_data)
        self.pub_status = self.node.create_publisher(String, cfg.status_topic, 10)
        for cam in self.estimator.cameras:
            self.node.create_subscription(Image, cfg.camera_topic.format(name=cam),
                                          lambda msg, c=cam: self._on_image(msg, c), qos_profile_sensor_data)
        self.kinematics = None
        if self.estimator.reads_arm:
            from real.joint_vla import JOINT_NAMES, ArmKinematics

            self.kinematics, self._joint_names = ArmKinematics(), tuple(JOINT_NAMES)
            self.node.create_subscription(JointState, cfg.joint_states_topic, self._on_joint_state,
                                          qos_profile_sensor_data)
        self.node.create_timer(1.0 / cfg.rate_hz, self.tick)
        self._spinner: BackgroundSpinner | None = None
        self._context = context

    def _on_image(self, msg: Any, cam: str) -> None:
        h, w = self.estimator.image_size[cam]
        try:
            img = image_to_rgb(msg, h, w)
        except MessageError as e:
            return self._drop("image", f"camera {cam}: image dropped: {e}")
        with self._lock:
            self._frames[cam] = (img, stamp_seconds(msg.header.stamp), msg.header.stamp)

    def _on_joint_state(self, msg: Any) -> None:
        try:
            q = joint_positions(msg, self._joint_names)
            arm = self.kinematics.proprio(q)
        except (MessageError, ValueError) as e:
            return self._drop("joint_states", f"joint state dropped: {e}")
        with self._lock:
            self._arms.append((arm, stamp_seconds(msg.header.stamp)))

    def _drop(self, kind: str, why: str) -> None:
        with self._lock:
            self.rejected[kind] += 1
        self.node.get_logger().warning(why, throttle_duration_sec=5.0)

    def tick(self) -> None:
        """One estimate from every camera's latest frame, when each is new and they are close in time."""
        with self._lock:
            if len(self._frames) < len(self.estimator.cameras):
                return
            frames, arms = dict(self._frames), list(self._arms)
        stamps = {c: f[1] for c, f in frames.items()}
        if all(self._used.get(c) == t for c, t in stamps.items()):
            return  # nothing new since the last estimate
        if max(stamps.values()) - min(stamps.values()) > self.cfg.max_age_s:
            return
        arm = None
        if self.kinematics is not None:
            arm = nearest_in_time(arms, float(np.mean(list(stamps.values()))), self.cfg.max_age_s)
            if arm is None:
                return  # the hand's pose of these frames is not in yet
        poses = self.estimator.estimate({c: f[0] for c, f in frames.items()}, None if arm is None else arm[0])
        if np.all(np.isfinite(poses)):
            poses = self.smoother(poses)
            oldest = min(frames.values(), key=lambda f: f[1])[2]
            self.pub.publish(pose_array(poses, oldest))
            self.published += 1
        else:
            self.rejected["nonfinite"] += 1
        self._used, self.used_arm = stamps, arm
        if not self.published:
            return
        if self.published % max(1, round(self.cfg.rate_hz)) == 1:
            self.pub_status.publish(String(data=json.dumps(self.status())))

    def status(self) -> dict[str, Any]:
        out = {"published": self.published, "rejected": dict(self.rejected), "cameras": self.estimator.cameras,
               "objects": list(self.estimator.objects), "estimator": self.cfg.estimator,
               "reads_arm": self.estimator.reads_arm}
        members = getattr(self.estimator, "members", None)
        if members:  # an ensemble: how far apart its members read the last frames (an operator's warning sign)
            out["members"] = len(members)
            spread = self.estimator.last_spread_mm
            if spread is not None:
                out["spread_mm"] = {o: round(float(spread[-1][k]), 1) for k, o in enumerate(self.estimator.objects)}
        return out

    def start(self) -> None:
        self._spinner = BackgroundSpinner(self.node, self._context)
        self.node.get_logger().info(f"pose node up: {self.cfg.estimator} -> {self.cfg.objects_topic} "
                                    f"({', '.join(self.estimator.objects)}) from {', '.join(self.estimator.cameras)}")

    def stop(self) -> None:
        if self._spinner is not None:
            self._spinner.close()
        self.node.get_logger().info(f"final status: {json.dumps(self.status())}")
        self.node.destroy_node()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Pose node: object poses from camera images (vla.perception)")
    ap.add_argument("--estimator", required=True, help="folder `vla perception train` wrote")
    ap.add_argument("--camera-topic", default=PoseNodeConfig.camera_topic)
    ap.add_argument("--objects-topic", default=PoseNodeConfig.objects_topic)
    ap.add_argument("--joint-states-topic", default=PoseNodeConfig.joint_states_topic,
                    help="the arm's joints, for an estimator that reads the arm's state")
    ap.add_argument("--rate-hz", type=float, default=PoseNodeConfig.rate_hz)
    ap.add_argument("--smoothing", type=float, default=PoseNodeConfig.smoothing,
                    help="weight of the newest estimate of a static object (1: off)")
    ap.add_argument("--domain-id", type=int, default=None, help="ROS_DOMAIN_ID (default: from the environment)")
    ap.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    args, ros_args = ap.parse_known_args(argv)
    logging.basicConfig(level=logging.INFO)
    cfg = PoseNodeConfig(estimator=args.estimator, camera_topic=args.camera_topic, objects_topic=args.objects_topic,
                         joint_states_topic=args.joint_states_topic,
                         rate_hz=args.rate_hz, smoothing=args.smoothing, ros_domain_id=args.domain_id)
    init_ros(ros_args, cfg.ros_domain_id)
    run_node_until_stopped(PoseNode(cfg), args.duration)


if __name__ == "__main__":
    main()
