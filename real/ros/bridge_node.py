"""MuJoCo robot bridge: a native sim task that behaves like a ros2_control arm, in wall-clock time.

Every control tick (default 20 Hz, the task's control step) it steps the physics one control step
towards the current joint-position target, then publishes what a position-controlled arm with
cameras publishes:

- `/joint_states` (sensor_msgs/JointState): j1..j7 + `gripper` (per-finger opening, m), with
  velocities; sensor-data QoS;
- one sensor_msgs/Image (rgb8, `image_size` square) per camera on `/camera/<name>/image_raw`;
- `/instruction` (std_msgs/String, the episode's instruction; once a second and after a reset);
- `/perception/object_poses` (geometry_msgs/PoseArray, frame `world`, the order of the task's
  OBJECT_POSES; pick_place: the cube, the zone), standing in for a pose estimator: a policy trained
  with `obs_mode=state` reads them (the policy node's `objects` section); `objects_topic: null` or a
  task without object poses publishes none;
- `/task/success` (std_msgs/Bool), `/task/subtask` (std_msgs/String), and `/task/status`
  (std_msgs/String with a JSON object: episode, seed, step, success, done, command counts) for
  orchestration and tests.

Commands (the policy node's topics): std_msgs/Float64MultiArray on the forward_command_controller
topic, or trajectory_msgs/JointTrajectory (joint_trajectory_controller: the trajectory starts on
receipt; each tick the first point whose `time_from_start` has not passed is the target, the last
point once all have). Every command is validated (size / joint names, finite, inside the joint
ranges; a trajectory's points at most `max_step` per control period apart by their `time_from_start`):
a bad one is rejected, counted per reason and logged, and the arm keeps the last good target. No
command -> the arm holds its target.

One per-tick bound, whatever the idle time or the trajectory timing: each tick the target applied to
the motors moves at most `max_step` (per arm joint) from the target applied the tick before, towards
the commanded one (a slew limiter, as ros2_control's joint-limits saturation does for a position
interface). A far target is therefore reached at the bound's speed, never in one tick, and a command
that outruns the arm (one lost in transit, a stalled sender) is followed, never refused, so the arm is
never locked out (`limited_ticks` counts ticks where the bound acted).

Service `/bridge/sensor_dropout` (std_srvs/SetBool): fault injection, true stops the joint states,
images and object poses (a dead sensor bus) while the physics and `/task/status` go on.
Service `/bridge/reset` (std_srvs/Trigger): next episode (seed = first seed + episode index), arm
back home. An episode's clock starts at the first accepted command (start-up of the policy side is
not task time); it is `done` at success or `horizon` ticks later; the result is latched (and
appended to `--result-file` as a JSON line) while the physics keeps running.

Run:  python -m real.ros.bridge_node --task pick_place --seed 0 --domain-id 7
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import yaml

# DDS multicasts discovery off the machine unless told otherwise; must be set before rclpy loads rmw.
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

import rclpy
from geometry_msgs.msg import Pose, PoseArray
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Bool, Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from real.joint_vla import JOINT_NAMES, N_JOINTS
from real.ros.spinner import init_ros, run_node_until_stopped
from vla.robot.arm import ARM_REACH_M, JOINT_UNIT_RAD

log = logging.getLogger(__name__)

COMMAND_INTERFACES = ("forward", "trajectory")
REJECT_REASONS = ("size", "names", "nonfinite", "limit", "speed", "empty", "time")


@dataclass
class BridgeConfig:
    task: str = "pick_place"
    seed: int = 0
    image_size: int = 84
    cameras: list[str] = field(default_factory=lambda: ["agentview", "robot0_eye_in_hand"])
    rate_hz: float = 20.0  # must be the task's control rate (one physics control step per tick)
    horizon: int = 200
    command_interface: str = "forward"
    command_topic: str = "/forward_position_controller/commands"
    joint_states_topic: str = "/joint_states"
    camera_topic: str = "/camera/{name}/image_raw"
    instruction_topic: str = "/instruction"
    objects_topic: str | None = "/perception/object_poses"  # None: no object poses
    max_step: float = 0.5  # rad (arm): the most the applied target moves in one control tick
    ros_domain_id: int | None = None  # None: ROS_DOMAIN_ID from the environment
    result_file: str | None = None  # JSON lines, one per finished episode
    # a real arm's sensor and actuator errors on what the bridge publishes and executes (vla.perturb): the
    # names mean what they mean in `vla eval`; in joint space proprio_noise is its millimetres over the
    # arm's reach in radians per joint and action_noise its share of one action unit's joint motion
    perturb: str = "none"

    def __post_init__(self) -> None:
        from vla.perturb import parse_perturb

        parse_perturb(self.perturb)
        if self.command_interface not in COMMAND_INTERFACES:
            raise ValueError(f"command_interface must be one of {COMMAND_INTERFACES}, got {self.command_interface!r}")
        if not 0 < self.rate_hz <= 1000:
            raise ValueError(f"rate_hz must be in (0, 1000], got {self.rate_hz}")
        if self.horizon < 1 or self.image_size < 1:
            raise ValueError(f"horizon and image_size must be >= 1, got {self.horizon}, {self.image_size}")
        if not self.max_step > 0:
            raise ValueError(f"max_step must be > 0, got {self.max_step}")
        if self.ros_domain_id is not None and not 0 <= self.ros_domain_id <= 232:
            raise ValueError(f"ros_domain_id must be in [0, 232], got {self.ros_domain_id}")
        if "{name}" not in self.camera_topic:
            raise ValueError(f"camera_topic must contain '{{name}}', got {self.camera_topic!r}")


def load_bridge_config(path: str | Path | None, **overrides: Any) -> BridgeConfig:
    """YAML (unknown keys are errors) + non-None keyword overrides."""
    raw: dict[str, Any] = {}
    if path is not None:
        raw = yaml.safe_load(Path(path).read_text()) or {}
        if not isinstance(raw, dict):
            raise ValueError(f"{path}: bridge config must be a mapping")
    raw.update({k: v for k, v in overrides.items() if v is not None})
    known = {f.name for f in fields(BridgeConfig)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(f"bridge config: unknown keys {unknown} (known: {sorted(known)})")
    return BridgeConfig(**raw)


class CommandValidator:
    """Checks a joint-position command before it reaches the (simulated) motors."""

    def __init__(self, lower: np.ndarray, upper: np.ndarray, max_step: float) -> None:
        self.lower, self.upper, self.max_step = np.asarray(lower, float), np.asarray(upper, float), max_step

    def check(self, values: Any) -> tuple[np.ndarray | None, str | None, str]:
        """(target, None, "") if good, else (None, reason, detail). How far the target is from the arm
        is not checked here: `step_towards` bounds the motion per tick, so no distance is refused (a
        refusal by distance locks a moving sender out once it is one step ahead)."""
        try:
            q = np.asarray(values, dtype=np.float64).ravel()
        except (TypeError, ValueError) as exc:
            return None, "size", f"not numeric: {exc}"
        if q.shape != (N_JOINTS,):
            return None, "size", f"{q.size} values, expected {N_JOINTS} ({', '.join(JOINT_NAMES)})"
        if not np.all(np.isfinite(q)):
            return None, "nonfinite", f"non-finite values at {np.flatnonzero(~np.isfinite(q)).tolist()}"
        bad = (q < self.lower) | (q > self.upper)
        if np.any(bad):
            names = [JOINT_NAMES[i] for i in np.flatnonzero(bad)]
            return None, "limit", f"joints {names} at {q[bad]} outside [{self.lower[bad]}, {self.upper[bad]}]"
        return q, None, ""

    def check_speed(self, times: np.ndarray, points: np.ndarray, period: float) -> tuple[str | None, str]:
        """A trajectory whose consecutive points ask for more than `max_step` per control period, by
        their own `time_from_start`, is not a motion the arm can follow: reject it as a whole."""
        if len(points) < 2:
            return None, ""
        per_period = np.abs(np.diff(points[:, :7], axis=0)).max(axis=1) / np.diff(times) * period
        worst = int(np.argmax(per_period))
        if per_period[worst] > self.max_step * (1 + 1e-9):
            return "speed", (f"points {worst} -> {worst + 1} move {per_period[worst]:.3f} rad per control period "
                             f"(max_step {self.max_step})")
        return None, ""

    def step_towards(self, commanded: np.ndarray, applied: np.ndarray) -> tuple[np.ndarray, bool]:
        """The target for this tick: `commanded`, with each arm joint moved at most `max_step` from the
        target applied the tick before. (target, whether the bound acted)."""
        out = np.asarray(commanded, dtype=np.float64).copy()
        delta = out[:7] - applied[:7]
        clipped = np.clip(delta, -self.max_step, self.max_step)
        out[:7] = applied[:7] + clipped
        return out, bool(np.any(clipped != delta))


def trajectory_arrays(msg: JointTrajectory) -> tuple[np.ndarray | None, np.ndarray | None, str | None, str]:
    """(times [N], points [N, 8] in JOINT_NAMES order, None, "") or (None, None, reason, detail)."""
    names = list(msg.joint_names)
    if sorted(names) != sorted(JOINT_NAMES) or len(set(names)) != len(names):
        return None, None, "names", f"joint_names {names}, expected {list(JOINT_NAMES)}"
    if not msg.points:
        return None, None, "empty", "trajectory has no points"
    order = [names.index(n) for n in JOINT_NAMES]
    pts = []
    for p in msg.points:
        if len(p.positions) != len(names):
            return None, None, "size", f"point with {len(p.positions)} positions for {len(names)} joints"
        pts.append(np.asarray(p.positions, dtype=np.float64)[order])
    times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in msg.points])
    if np.any(np.diff(times) <= 0) or times[0] < 0:
        return None, None, "time", f"time_from_start not strictly increasing from >= 0: {times}"
    return times, np.stack(pts), None, ""


def pose_array(poses: np.ndarray, stamp: Any) -> PoseArray:
    """float [K, 7] (position, quaternion xyzw) -> a world-frame PoseArray stamped `stamp`."""
    msg = PoseArray(poses=[Pose() for _ in poses])
    for p, row in zip(msg.poses, np.asarray(poses, dtype=np.float64), strict=True):
        p.position.x, p.position.y, p.position.z = map(float, row[:3])
        p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = map(float, row[3:7])
    msg.header.stamp, msg.header.frame_id = stamp, "world"
    return msg


class BridgeNode:
    """Owns the env, the rclpy node and the real-time loop. `start()` / `stop()`."""

    def __init__(self, cfg: BridgeConfig, context: rclpy.context.Context | None = None) -> None:
        from vla.registry import TASKS

        self.cfg = cfg
        # The bridge counts the episode's ticks itself (from the first accepted command).
        self.env = TASKS.make(cfg.task, cameras=tuple(cfg.cameras), image_size=cfg.image_size,
                              horizon=10**9).unwrapped
        if not hasattr(self.env, "step_joints"):
            raise ValueError(f"task {cfg.task!r} is not a native MuJoCo task (no joint-position interface)")
        dt = self.env.n_substeps * self.env.model.opt.timestep
        if abs(dt - 1.0 / cfg.rate_hz) > 1e-9:
            raise ValueError(f"rate_hz {cfg.rate_hz} does not match the task's control step {dt} s")
        from vla.robot.arm import FINGER_MAX

        rng = self.env.arm_range()
        self.lower = np.append(rng[:, 0], 0.0)
        self.upper = np.append(rng[:, 1], FINGER_MAX)
        self.validator = CommandValidator(self.lower, self.upper, cfg.max_step)
        self.period = 1.0 / cfg.rate_hz
        self._lock = threading.Lock()  # env, target, counters
        self._stop = threading.Event()
        self.episode = -1
        self.n_overruns = 0
        self.sensor_dropout = False  # fault injection: joint states and images stop (physics goes on)
        self.perturber, self.scene = self._perturbation(cfg)
        self._reset_env()

        self.node = rclpy.create_node("mujoco_bridge", context=context)
        self.pub_js = self.node.create_publisher(JointState, cfg.joint_states_topic, qos_profile_sensor_data)
        self.pub_img = {c: self.node.create_publisher(Image, cfg.camera_topic.format(name=c), qos_profile_sensor_data)
                        for c in cfg.cameras}
        self.pub_ins = self.node.create_publisher(String, cfg.instruction_topic, 10)
        self.pub_objects = None
        if cfg.objects_topic and type(self.env).OBJECT_POSES:
            self.pub_objects = self.node.create_publisher(PoseArray, cfg.objects_topic, qos_profile_sensor_data)
        self.pub_success = self.node.create_publisher(Bool, "/task/success", 10)
        self.pub_subtask = self.node.create_publisher(String, "/task/subtask", 10)
        self.pub_status = self.node.create_publisher(String, "/task/status", 10)
        if cfg.command_interface == "forward":
            self.node.create_subscription(Float64MultiArray, cfg.command_topic, self._on_forward, 10)
        else:
            self.node.create_subscription(JointTrajectory, cfg.command_topic, self._on_trajectory, 10)
        self.node.create_service(Trigger, "/bridge/reset", self._on_reset)
        self.node.create_service(SetBool, "/bridge/sensor_dropout", self._on_dropout)
        self._spin_exec = SingleThreadedExecutor(context=context)
        self._spin_exec.add_node(self.node)
        self._threads = [threading.Thread(target=self._spin, name="ros-spin", daemon=True),
                         threading.Thread(target=self._loop, name="physics", daemon=True)]

    def _perturbation(self, cfg: BridgeConfig) -> tuple[Any, Any]:
        from vla.perturb import Perturber, groups_of, parse_perturb

        kinds = parse_perturb(cfg.perturb)
        groups = groups_of(kinds)
        if "pose" in groups and not (cfg.objects_topic and type(self.env).OBJECT_POSES):
            raise ValueError(f"perturb={cfg.perturb}: pose perturbations need published object poses "
                             f"(objects_topic set, a task with poses); task {cfg.task!r} publishes none")
        if groups & {"image", "camera"} and not cfg.cameras:
            raise ValueError(f"perturb={cfg.perturb}: image and camera perturbations need cameras (cameras: [])")
        scene = None
        if groups & {"camera", "scene"}:
            from sim.perturb import SceneEffects  # the bridge runs the simulator anyway

            scene = SceneEffects(self.env, kinds)
        return Perturber(kinds), scene

    # ---- episode state (call with the lock held, or before the threads start) --------------------
    def _reset_env(self) -> None:
        self.episode += 1
        self.seed = self.cfg.seed + self.episode
        self.perturber.reset(self.seed)
        if self.scene is not None:
            self.scene.before_reset(self.perturber)
        self.obs, self.info = self.env.reset(seed=self.seed)
        if self.scene is not None and self.scene.after_reset(self.perturber):
            self.obs = self.env._obs()  # the cameras see the distractor from the first frame
        self.target = np.append(self.env.arm_qpos(), self.env.finger_qpos().mean())  # commanded
        self.applied = self.target.copy()  # what the motors got last tick (the per-tick bound's origin)
        self._trajectory: tuple[float, np.ndarray, np.ndarray] | None = None
        self.step = 0
        self.done = False
        self.success = False
        self.done_step: int | None = None
        self.done_wall_s: float | None = None  # first command -> done, wall clock
        self.t_start = time.monotonic()
        self.t_first_command: float | None = None
        self.counts = {"received": 0, "accepted": 0, "limited_ticks": 0,
                       **{f"rejected_{r}": 0 for r in REJECT_REASONS}}
        self._publish_instruction_now = True

    def status(self) -> dict[str, Any]:
        with self._lock:
            return self._status()

    def _status(self) -> dict[str, Any]:
        rejected = sum(v for k, v in self.counts.items() if k.startswith("rejected_"))
        return {"episode": self.episode, "seed": self.seed, "step": self.step, "success": self.success,
                "subtask": self.info.get("subtask", ""), "subtasks_done": self.info.get("subtasks_done", []),
                "done": self.done, "done_step": self.done_step, "done_wall_s": self.done_wall_s,
                "instruction": self.env.instruction,
                "commands_rejected": rejected, "overruns": self.n_overruns,
                "wall_s": round(time.monotonic() - self.t_start, 3),
                "first_command_s": None if self.t_first_command is None
                else round(self.t_first_command - self.t_start, 3), **self.counts}

    # ---- commands ---------------------------------------------------------------------------------
    def _reject(self, reason: str, detail: str) -> None:
        self.counts[f"rejected_{reason}"] += 1
        self.node.get_logger().warning(f"rejected command ({reason}): {detail}; holding the last good target",
                                       throttle_duration_sec=1.0)

    def _accept(self) -> None:
        self.counts["accepted"] += 1
        if self.t_first_command is None:
            self.t_first_command = time.monotonic()

    def _on_forward(self, msg: Float64MultiArray) -> None:
        with self._lock:
            self.counts["received"] += 1
            q, reason, detail = self.validator.check(list(msg.data))
            if reason is not None:
                return self._reject(reason, detail)
            self.target, self._trajectory = q, None
            self._accept()

    def _on_trajectory(self, msg: JointTrajectory, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now  # `now`: tests drive the clock themselves
        with self._lock:
            self.counts["received"] += 1
            times, pts, reason, detail = trajectory_arrays(msg)
            if reason is not None:
                return self._reject(reason, detail)
            for p in pts:  # every point must be a good command (a trajectory never carries a bad one)
                _, reason, detail = self.validator.check(p)
                if reason is not None:
                    return self._reject(reason, detail)
            reason, detail = self.validator.check_speed(times, pts, self.period)
            if reason is not None:
                return self._reject(reason, detail)
            self._trajectory = (now, times, pts)
            self._accept()

    def _current_target(self, now: float) -> np.ndarray:
        if self._trajectory is not None:
            start, times, pts = self._trajectory
            due = np.flatnonzero(times >= now - start)
            self.target = pts[due[0]] if due.size else pts[-1]
        return self.target

    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        with self._lock:
            self._reset_env()
            response.success, response.message = True, json.dumps({"episode": self.episode, "seed": self.seed})
        self.node.get_logger().info(f"reset: episode {self.episode}, seed {self.seed}")
        return response

    def _on_dropout(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        self.sensor_dropout = bool(request.data)
        self.node.get_logger().warning(f"sensor dropout {'ON' if request.data else 'off'}")
        response.success, response.message = True, "dropout" if request.data else "sensors on"
        return response

    # ---- loop -------------------------------------------------------------------------------------
    def _tick(self, now: float) -> None:
        with self._lock:
            target = self._current_target(now)
            if self.perturber.active("action") or self.perturber.active("timing"):
                target = self.perturber.joint_target(target, self.applied, JOINT_UNIT_RAD)
                target = np.clip(target, self.lower, self.upper)
            self.applied, limited = self.validator.step_towards(target, self.applied)
            self.counts["limited_ticks"] += limited
            self.obs, _, _, _, self.info = self.env.step_joints(self.applied[:7], self.applied[7])
            if self.t_first_command is not None and not self.done:
                self.step += 1
            if not self.done and self.t_first_command is not None and (
                    self.info["success"] or self.step >= self.cfg.horizon):
                self.done, self.success, self.done_step = True, bool(self.info["success"]), self.step
                self.done_wall_s = round(now - self.t_first_command, 3)
                self._write_result()
            # Soft joint limits let a joint sit a hair past its range (e.g. open fingers at 0.045 + 1e-5);
            # reported clipped, as a driver reports calibrated positions, so consumers that refuse a
            # start outside the limits (the safety layer) are not tripped by solver slack.
            q = np.clip(self.env.arm_qpos(), self.lower[:7], self.upper[:7])
            qd = self.env.arm_qvel()
            finger = float(np.clip(self.env.finger_qpos().mean(), self.lower[7], self.upper[7]))
            finger_vel = float(self.env.finger_qvel().mean())
            obs, info, status = self.obs, self.info, self._status()
            poses = self.env.object_poses() if self.pub_objects is not None else None
            if self.perturber.kinds:  # what a real arm's driver, cameras and pose estimator would report
                if poses is not None:
                    poses = self.perturber.poses(poses)
                q, finger = self.perturber.joint_state(q, finger, ARM_REACH_M)
                obs = {**obs, "images": self.perturber.images(obs["images"])}
            send_instruction = self._publish_instruction_now or self.step % round(self.cfg.rate_hz) == 0
            self._publish_instruction_now = False
        stamp = self.node.get_clock().now().to_msg()
        self.pub_status.publish(String(data=json.dumps(status)))
        if self.sensor_dropout:
            return
        js = JointState(name=list(JOINT_NAMES), position=[*map(float, q), finger],
                        velocity=[*map(float, qd), finger_vel])
        js.header.stamp = stamp
        self.pub_js.publish(js)
        for cam, pub in self.pub_img.items():
            img = obs["images"][cam]
            msg = Image(height=img.shape[0], width=img.shape[1], encoding="rgb8", is_bigendian=0,
                        step=img.shape[1] * 3, data=img.tobytes())
            msg.header.stamp, msg.header.frame_id = stamp, cam
            pub.publish(msg)
        if poses is not None:
            self.pub_objects.publish(pose_array(poses, stamp))
        if send_instruction:
            self.pub_ins.publish(String(data=obs["instruction"]))
        self.pub_success.publish(Bool(data=bool(info["success"])))
        self.pub_subtask.publish(String(data=str(info["subtask"])))

    def _write_result(self) -> None:
        if self.cfg.result_file:
            with open(self.cfg.result_file, "a") as f:
                f.write(json.dumps(self._status()) + "\n")

    def _loop(self) -> None:
        t0 = time.monotonic()
        k = 0
        while not self._stop.is_set():
            target = t0 + k * self.period
            delay = target - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            late = int((time.monotonic() - target) // self.period)
            if late > 0:  # the machine stalled: skip the missed slots, do not bunch physics steps
                self.n_overruns += late
                k += late
            try:
                self._tick(time.monotonic())
            except Exception as exc:  # a dead loop must be loud: nothing is published any more
                self.node.get_logger().fatal(f"physics loop died: {type(exc).__name__}: {exc}")
                raise
            k += 1

    def _spin(self) -> None:
        while not self._stop.is_set():
            self._spin_exec.spin_once(timeout_sec=0.05)

    def start(self) -> None:
        for t in self._threads:
            t.start()
        self.node.get_logger().info(f"bridge up: task {self.cfg.task}, seed {self.seed}, {self.cfg.rate_hz:g} Hz, "
                                    f"commands on {self.cfg.command_topic} ({self.cfg.command_interface})")

    def stop(self) -> None:
        self._stop.set()
        self.node.get_logger().info(f"final status: {json.dumps(self.status())}")
        for t in self._threads:
            t.join(timeout=5.0)
        self._spin_exec.shutdown()
        self.node.destroy_node()
        self.env.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="MuJoCo robot bridge (a native sim task as a ros2_control arm)")
    ap.add_argument("--config", type=Path, default=None, help="configs/deploy/bridge.yaml (optional)")
    ap.add_argument("--task", default=None)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--horizon", type=int, default=None)
    ap.add_argument("--image-size", type=int, default=None)
    ap.add_argument("--command-interface", choices=COMMAND_INTERFACES, default=None)
    ap.add_argument("--command-topic", default=None)
    ap.add_argument("--domain-id", type=int, default=None, help="ROS_DOMAIN_ID (default: from the environment)")
    ap.add_argument("--result-file", default=None, help="append one JSON line per finished episode")
    ap.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    args, ros_args = ap.parse_known_args(argv)
    logging.basicConfig(level=logging.INFO)
    cfg = load_bridge_config(args.config, task=args.task, seed=args.seed, horizon=args.horizon,
                             image_size=args.image_size, command_interface=args.command_interface,
                             command_topic=args.command_topic, ros_domain_id=args.domain_id,
                             result_file=args.result_file)
    init_ros(ros_args, cfg.ros_domain_id)
    run_node_until_stopped(BridgeNode(cfg), args.duration)


if __name__ == "__main__":
    main()

