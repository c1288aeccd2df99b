"""What the robot says, validated at the boundary: one class for every node that reads an arm.

The policy node and a correction session over ROS (`real/session/ros_env.py`) subscribe to the same
topics of the deploy config (joint states, one image per camera, the instruction, and the object poses
when the config has an `objects` section) and must treat bad input the same way, so both use this:
each message is checked (joint names and finiteness, image encoding and size, instruction text, the
number, frame, finiteness and unit quaternions of the object poses, and the header stamp within
`stamp_tolerance_s` of the node's ROS clock) and dropped with a counter per kind when bad; what
passes is kept with its receipt time on the monotonic clock, which drives the stale-observation
watchdogs (no clock sync needed).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from real.config import DeployConfig
from real.ros.convert import (
    MessageError,
    StampError,
    check_stamp,
    image_to_rgb,
    instruction_text,
    joint_positions,
    joint_velocities,
    object_poses,
)


@dataclass
class Snapshot:
    """A consistent copy of the newest inputs; times on the monotonic clock (-inf: never received)."""

    q: np.ndarray | None
    qd: np.ndarray | None
    q_time: float
    images: dict[str, np.ndarray] = field(default_factory=dict)
    image_times: dict[str, float] = field(default_factory=dict)
    instruction: str = ""
    instruction_received: bool = False  # from the robot (else `instruction` is the config's default)
    objects: np.ndarray | None = None  # float64 [K, 7] object poses (config `objects`)
    objects_time: float = -np.inf

    def stale(self, names: list[str], now: float, max_age_s: float, since: float = -np.inf) -> list[str]:
        """The sources ("joints", "objects" or a camera name) with nothing newer than `since`, or older
        than `max_age_s` at `now`."""
        times = {"joints": self.q_time, "objects": self.objects_time, **self.image_times}
        return [n for n in names if times.get(n, -np.inf) <= since or now - times.get(n, -np.inf) > max_age_s]


class RobotInputs:
    """Subscribes on `node` through `add(kind, *args)` (the owner's entity bookkeeping) and keeps the
    newest valid joint state, images and instruction. `on_joint_state(t, q)` is called with each
    accepted joint state (the recorder's resampling needs every one)."""

    def __init__(self, cfg: DeployConfig, node: Any, add: Callable[..., Any], now: Callable[[], float],
                 on_joint_state: Callable[[float, np.ndarray], None] | None = None) -> None:
        from rclpy.qos import qos_profile_sensor_data
        from sensor_msgs.msg import Image, JointState
        from std_msgs.msg import String

        self.cfg, self.node, self.now, self.on_joint_state = cfg, node, now, on_joint_state
        self._lock = threading.Lock()
        self._snap = Snapshot(q=None, qd=None, q_time=-np.inf, instruction=cfg.default_instruction)
        # per message kind; "stamp" counts the joint states and images (also in their kind) dropped for
        # their header stamp alone
        self.rejected: dict[str, int] = {"joint_states": 0, "image": 0, "instruction": 0, "stamp": 0}
        add("subscription", JointState, cfg.joint_states_topic, self._on_joint_state, qos_profile_sensor_data)
        for cam in cfg.cameras:
            add("subscription", Image, cam.topic, lambda m, c=cam: self._on_image(m, c), qos_profile_sensor_data)
        if cfg.objects is not None:
            from geometry_msgs.msg import PoseArray

            self.rejected["objects"] = 0
            add("subscription", PoseArray, cfg.objects.topic, self._on_objects, qos_profile_sensor_data)
        add("subscription", String, cfg.instruction_topic, self._on_instruction, 10)
        self.started = now()

    def awaiting_instruction(self) -> bool:
        """True while the robot's first instruction has not come and `instruction_wait_s` has not
        passed since these inputs were created (the owner holds the arm meanwhile)."""
        with self._lock:
            if self._snap.instruction_received:
                return False
        return self.now() - self.started < self.cfg.instruction_wait_s

    def snapshot(self) -> Snapshot:
        with self._lock:
            s = self._snap
            return Snapshot(q=s.q, qd=s.qd, q_time=s.q_time, images=dict(s.images),
                            image_times=dict(s.image_times), instruction=s.instruction,
                            instruction_received=s.instruction_received, objects=s.objects,
                            objects_time=s.objects_time)

    def images_and_instruction(self) -> tuple[dict[str, np.ndarray], str]:
        """The cheap part of a snapshot, for the control thread's recorder hand-over."""
        with self._lock:
            return dict(self._snap.images), self._snap.instruction

    @property
    def n_rejected(self) -> int:
        return sum(v for k, v in self.rejected.items() if k != "stamp")

    # ---- callbacks (the spin thread) -----------------------------------------------------------
    def _reject(self, kind: str, err: MessageError) -> None:
        self.rejected[kind] += 1
        self.rejected["stamp"] += isinstance(err, StampError)
        self.node.get_logger().warning(f"dropped {kind} message: {err}", throttle_duration_sec=1.0)

    def _check_stamp(self, msg: Any) -> None:
        if self.cfg.stamp_tolerance_s is not None:
            now = self.node.get_clock().now().nanoseconds * 1e-9
            check_stamp(msg.header.stamp, now, self.cfg.stamp_tolerance_s)

    def _on_joint_state(self, msg: Any) -> None:
        try:
            self._check_stamp(msg)
            q = joint_positions(msg, self.cfg.limits.names)
            qd = joint_velocities(msg, self.cfg.limits.names)
        except MessageError as err:
            return self._reject("joint_states", err)
        t = self.now()
        with self._lock:
            self._snap.q, self._snap.qd, self._snap.q_time = q, qd, t
        if self.on_joint_state is not None:
            self.on_joint_state(t, q)

    def _on_image(self, msg: Any, cam: Any) -> None:
        try:
            self._check_stamp(msg)
            img = image_to_rgb(msg, cam.height, cam.width)
        except MessageError as err:
            return self._reject("image", err)
        with self._lock:
            self._snap.images[cam.name] = img
            self._snap.image_times[cam.name] = self.now()

    def _on_objects(self, msg: Any) -> None:
        o = self.cfg.objects
        assert o is not None
        try:
            self._check_stamp(msg)
            poses = object_poses(msg, o.count, o.frame_id, o.quat_norm_tolerance)
        except MessageError as err:
            return self._reject("objects", err)
        with self._lock:
            self._snap.objects, self._snap.objects_time = poses, self.now()

    def _on_instruction(self, msg: Any) -> None:
        try:
            text = instruction_text(msg, self.cfg.max_instruction_chars)
        except MessageError as err:
            return self._reject("instruction", err)
        with self._lock:
            self._snap.instruction = text
            self._snap.instruction_received = True
