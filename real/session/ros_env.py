"""The arm over ROS 2 as the env of a correction session (`vla session robot=configs/deploy/native_arm.yaml`).

`run_supervised_episode` drives this exactly as it drives a simulated task, so the supervisor, RaC rewind and
the store are the same code for sim and real, and the episodes have the simulator's schema: the
cameras of the deploy config, state = the VLA's proprio (end-effector pose and fingers, computed from
the joint states by forward kinematics, as `real.joint_vla` does for the policy node), action = the
end-effector delta the policy or the person chose. Each step turns that delta into joint targets
with the simulator's IK step at the measured pose, passes them through the same `SafetyFilter` as
the policy node (limits, velocity, acceleration; nothing else reaches the command topic), publishes
them, and waits for the next control tick on the wall clock.

Every incoming message is validated by the policy node's own `RobotInputs` (joint names and
finiteness, image encoding and size, instruction text, header stamps). No fresh joint state or
image for `max_observation_age_s`: the arm holds (the filter brakes it to a stop) and the step
waits; after `stale_timeout_s` the session stops with one line saying what went silent.

Episode boundaries: `reset` calls `reset_service` (std_srvs/Trigger; the MuJoCo bridge's
`/bridge/reset`) when one is named, else the scene is the operator's to reset. Success on a real
arm is the person's end mark; against the bridge, `/task/status` (JSON: success, done) also ends
the episode and labels it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

import numpy as np

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

from real.config import DeployConfig
from real.joint_vla import EE_DIM, JOINT_NAMES, ArmKinematics
from real.safety import SafetyFilter


class RobotSilent(RuntimeError):
    """No fresh joint states or images from the robot: the session cannot go on."""


class _Box:  # the one attribute of a gym Box that the session reads
    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape


class RosArmEnv:
    def __init__(self, cfg: DeployConfig, *, task: str, horizon: int = 300, reset_service: str = "",
                 status_topic: str = "/task/status", stale_timeout_s: float = 5.0,
                 domain_id: int | None = None) -> None:
        import rclpy
        from std_msgs.msg import Float64MultiArray, String
        from std_srvs.srv import Trigger

        from real.ros.inputs import RobotInputs
        from real.ros.spinner import BackgroundSpinner

        if tuple(cfg.limits.names) != JOINT_NAMES:
            raise ValueError(f"a session over ROS drives the native arm's joints {list(JOINT_NAMES)}; the deploy "
                             f"config names {list(cfg.limits.names)}")
        if cfg.command_interface != "forward":
            raise ValueError("a session over ROS publishes joint targets each tick: set command_interface: forward")
        self._features = None  # the task's object features from the published poses (obs_mode=state)
        if cfg.objects is not None:
            from vla.robot.objects import pose_features

            names, self._features = pose_features(task)
            if len(names) != cfg.objects.count:
                raise ValueError(f"task '{task}' reports {len(names)} object poses ({', '.join(names)}); "
                                 f"the deploy config's objects section says {cfg.objects.count}")
        self.cfg, self.task, self.horizon = cfg, task, horizon
        self.dt = 1.0 / cfg.executor.rate_hz
        self.metadata = {"render_fps": cfg.executor.rate_hz}
        self.action_space = _Box((EE_DIM,))
        self.unwrapped = self
        self.stale_timeout_s = stale_timeout_s
        self.kin = ArmKinematics()
        self.safety = SafetyFilter(cfg.limits, self.dt)
        self._lock = threading.Lock()
        self._status: dict[str, Any] = {}
        self._status_rejected = 0
        self._Float64MultiArray, self._Trigger = Float64MultiArray, Trigger

        self.ctx = rclpy.context.Context()
        domain = domain_id if domain_id is not None else cfg.ros_domain_id
        rclpy.init(context=self.ctx, domain_id=domain) if domain is not None else rclpy.init(context=self.ctx)
        self.node = rclpy.create_node("vla_session", context=self.ctx)
        self.inputs = RobotInputs(cfg, self.node, lambda kind, *a: getattr(self.node, f"create_{kind}")(*a),
                                  time.monotonic)
        if status_topic:
            self.node.create_subscription(String, status_topic, self._on_status, 10)
        self.pub = self.node.create_publisher(Float64MultiArray, cfg.command_topic, 10)
        self.reset_client = self.node.create_client(Trigger, reset_service) if reset_service else None
        self.spinner = BackgroundSpinner(self.node, self.ctx)
        self._tick = 0
        self._next = 0.0
        self._episode_start = 0.0

    # ---- incoming ------------------------------------------------------------------------------
    @property
    def rejected(self) -> int:
        """Messages dropped at the boundary (every kind, the task status included)."""
        return self.inputs.n_rejected + self._status_rejected

    def _on_status(self, msg: Any) -> None:
        try:
            status = json.loads(msg.data)
        except ValueError:
            status = None
        if not isinstance(status, dict):
            self._status_rejected += 1
            return
        with self._lock:
            self._status = status

    # ---- observation --------------------------------------------------------------------------
    def _stale(self, since: float = -np.inf) -> list[str]:
        """The sources with nothing newer than `since` or older than the observation age limit."""
        names = ["joints", *(c.name for c in self.cfg.cameras), *(["objects"] if self.cfg.objects else [])]
        return self.inputs.snapshot().stale(names, time.monotonic(), self.cfg.executor.max_observation_age_s, since)

    def _wait_fresh(self, since: float = -np.inf) -> None:
        deadline = time.monotonic() + self.stale_timeout_s
        while stale := self._stale(since):
            if time.monotonic() > deadline:
                raise RobotSilent(f"no fresh {', '.join(stale)} from the robot for {self.stale_timeout_s:g} s "
                                  f"(topics {self.cfg.joint_states_topic}, "
                                  f"{', '.join(c.topic for c in self.cfg.cameras)}"
                                  f"{', ' + self.cfg.objects.topic if self.cfg.objects else ''})")
            if self.safety.initialised:  # brake to a stop while waiting, as the policy node holds
                self._publish(self.safety.step(None, self._tick, ("stale_observation", ", ".join(stale))))
            time.sleep(self.dt)

    def _obs(self) -> dict[str, Any]:
        s = self.inputs.snapshot()
        assert s.q is not None  # _wait_fresh came first
        state = self.kin.proprio(s.q)
        if self._features is not None:  # a policy trained with obs_mode=state reads them after the proprio
            assert s.objects is not None  # _wait_fresh came first
            state = np.concatenate([state, self._features(s.objects, state[:3])])
        return {"images": s.images, "state": state.astype(np.float32),
                "instruction": s.instruction or self.task, "timestamp": time.monotonic() - self._episode_start}

    def joints(self) -> np.ndarray:
        q = self.inputs.snapshot().q
        if q is None:
            raise RobotSilent(f"no joint state from the robot yet (topic {self.cfg.joint_states_topic})")
        return q.copy()

    def eef_pos(self) -> np.ndarray:
        return self.kin.pose(self.joints()[:7])[0]

    def eef_quat(self) -> np.ndarray:
        return self.kin.proprio(self.joints())[3:7]

    # ---- gym-style API ------------------------------------------------------------------------
    def _publish(self, command: np.ndarray) -> None:
        self.pub.publish(self._Float64MultiArray(data=[float(x) for x in command]))

    def reset(self, seed: int | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        requested = time.monotonic()
        if self.reset_client is not None:
            if not self.reset_client.wait_for_service(timeout_sec=self.stale_timeout_s):
                raise RobotSilent(f"reset service {self.reset_client.srv_name} is not offered")
            # A request sent right after discovery can be lost while DDS still matches the reply
            # path: without an answer in 2 s it is sent again (a reset is safe to repeat).
            deadline = time.monotonic() + self.stale_timeout_s
            future = self.reset_client.call_async(self._Trigger.Request())
            sent = time.monotonic()
            while not future.done():
                if time.monotonic() > deadline:
                    raise RobotSilent(f"reset service {self.reset_client.srv_name} did not answer")
                if time.monotonic() - sent > 2.0:
                    future = self.reset_client.call_async(self._Trigger.Request())
                    sent = time.monotonic()
                time.sleep(0.01)
            with self._lock:
                self._status = {}
        self._wait_fresh(since=requested)  # observations from after the reset only
        self.safety.reset(self.joints())
        self._tick = 0
        self._episode_start = self._next = time.monotonic()
        return self._obs(), {"subtask": ""}

    def step(self, action: np.ndarray) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        a = np.asarray(action, np.float64).reshape(-1)
        q = self.joints()
        target = self.kin.ee_to_joints(q[:7], a[None])[0] if a.shape == (EE_DIM,) and np.all(np.isfinite(a)) \
            else None  # the filter holds on a missing target and names it
        self._publish(self.safety.step(target, self._tick))
        self._tick += 1
        self._next += self.dt
        time.sleep(max(0.0, self._next - time.monotonic()))
        self._next = max(self._next, time.monotonic() - self.dt)  # a late step does not bunch the next ones
        self._wait_fresh()
        with self._lock:
            status = dict(self._status)
        success = bool(status.get("success", False))
        info = {"success": success, "subtask": str(status.get("subtask", "")), "hold": self.safety.hold_kind}
        return self._obs(), 0.0, bool(status.get("done", False)), self._tick >= self.horizon, info

    def close(self) -> None:
        import rclpy

        self.spinner.close()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.ctx)
