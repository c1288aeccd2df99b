"""ROS 2 policy node: wraps `ChunkExecutor` (async chunk execution + safety layer) for a ros2_control arm.

Subscribes `sensor_msgs/JointState` (the configured joints, by name; velocities too when present),
one `sensor_msgs/Image` per camera (rgb8/bgr8, exact size), an instruction `std_msgs/String` and, with
an `objects` section, the object poses (`geometry_msgs/PoseArray`, for a policy trained with
`obs_mode=state`: the joint-space adapter computes the task's object features from them); publishes
`std_msgs/Float64MultiArray` (forward_command_controller) or `trajectory_msgs/JointTrajectory`
(joint_trajectory_controller: the current command, then the remaining queued actions passed
through a preview of the safety filter, `time_from_start` = (i + 1) / rate), and
`diagnostic_msgs/DiagnosticArray` (latency, queue depth, jitter, starved ticks, rejects per kind,
holds entered / recovered per kind, inference retries; the message names the current hold and why).
Recording (a `recorder:` section with a store path, `real/recorder.py`): every episode goes to the
EpisodeStore, ended and labelled by the operator through `~/end_episode` (std_srvs/SetBool, true =
success) or a std_msgs/Bool on `recorder.label_topic`; the next episode starts at once. Recording
runs on its own thread and never delays a control tick; its counters are in the diagnostics.
Service `~/pause` (std_srvs/SetBool): true brakes the arm to rest through the safety filter, then
publishes nothing more (the controller keeps the last, resting command) and drops any inference in
flight; the reply comes once the loop has stopped. False starts a new episode as a fresh node would:
the policy's state reset, a new executor (plan, ensemble, statistics), the safety filter re-started
at the first joint state received after the call, and no inference before every input (joints,
cameras, object poses) has a message received after it. Between episodes (the scene reset by hand, or
by the deploy stage's `/bridge/reset`) the node keeps its loaded policy and its ROS connections.
Service `~/emergency_stop` (std_srvs/SetBool): true latches a hold; false clears it only when the
config sets `allow_estop_clear: true` (any process on the ROS domain can call the service: protect it
with SROS2 access control, see the README), else the reply is success=false and the latch stays.

Every message is validated at the boundary and dropped with a counter when bad: joint states (names,
lengths, finite also as float32), images (encoding, size), instructions (non-empty, length, no control
characters: see `convert.instruction_text`), object poses (count, frame, finite, unit quaternions),
and the header stamps of joint states, images and object poses (within `stamp_tolerance_s` of the
node's ROS clock: wall time, or /clock with `--ros-args -p use_sim_time:=true`; a replayed message is
rejected). Receipt times on the monotonic clock still drive the stale-observation watchdog. A finite
joint state that the arm cannot be in (a position past its joint's range by more than
`joint_state_position_tolerance`, a speed above `joint_state_velocity_factor` x max_velocity: a broken
encoder or driver) holds the arm as `implausible_joint_state`, named in the diagnostics, until sane
states return.

Threads: rclpy spins the subscriptions on one thread; the control clock runs on its own thread
(ROS timers would share the executor with callbacks and add jitter); inference on a third.
No joint state, camera image or object pose for `max_observation_age_s` -> the stale-observation
watchdog holds.

Run:  ROS_DOMAIN_ID=7 python -m real.ros.policy_node --config configs/deploy/policy_node.yaml
Works with the pip-wheel rclpy and with a sourced system ROS 2 (only rclpy + message packages).
"""

from __future__ import annotations

import argparse
import faulthandler
import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

# DDS multicasts discovery off the machine unless told otherwise; must be set before rclpy loads rmw.
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool, Float64MultiArray
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from real.config import DeployConfig, load_deploy_config, make_policy
from real.executor import ChunkExecutor, TickRecord
from real.instructions import InstructionPrep
from real.recorder import EpisodeRecorder
from real.ros import INFERENCE_HANGS
from real.ros.convert import duration_parts
from real.ros.inputs import RobotInputs
from real.ros.spinner import init_ros, run_node_until_stopped
from real.safety import SafetyFilter, implausible_joint_state
from real.worker import MonotonicClock, ThreadWorker
from vla.data.schema import StoreSchema
from vla.interfaces import Observation, Policy

log = logging.getLogger(__name__)
PAUSED = ("paused", "the ~/pause service: braking to rest, then no commands")


class PolicyNode:
    """Owns an rclpy node, the executor and the control thread. `start()` / `stop()`."""

    def __init__(self, cfg: DeployConfig, policy: Policy, context: rclpy.context.Context | None = None,
                 name: str = "vla_policy", node: rclpy.node.Node | None = None) -> None:
        """`node`: run on this node (the lifecycle node), which its owner spins; `stop()` then removes
        what this object created on it and leaves the node. Otherwise a node of its own, spun here."""
        needed = int(getattr(policy, "n_object_poses", 0))
        have = 0 if cfg.objects is None else cfg.objects.count
        if needed != have:
            raise ValueError(f"the policy reads {needed} object poses, the deploy config's objects section gives "
                             f"{have}" + (f" (set objects: {{topic: ..., count: {needed}}})" if needed else
                                          " (remove the objects section or deploy a policy that reads them)"))
        # A language-conditioned policy loads its model here, not on the inference thread when the first
        # new instruction comes (real/instructions.py); first, so that a failure leaves nothing behind.
        self.instructions = InstructionPrep.for_policy(policy)
        took = None
        if self.instructions is not None:
            try:
                took = self.instructions.warm_up(cfg.default_instruction)
            except BaseException:
                self.instructions.close()
                raise
        self.cfg = cfg
        self.clock = MonotonicClock()
        self._owns_node = node is None
        self.node = rclpy.create_node(name, context=context) if node is None else node
        if took is not None:
            self.node.get_logger().info(f"language model loaded in {took:.2f} s; new instructions are embedded "
                                        "off the inference thread")
        self._entities: list[tuple[str, object]] = []  # (kind, entity) created on the node, for stop()
        self.estop_clears_refused = 0
        self._warned_default = False
        self._stop = threading.Event()
        self.control_error: str | None = None

        cmd_qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)
        self.inputs = RobotInputs(cfg, self.node, self._add, self.clock.now, self._joint_state_received)
        self.rejected = self.inputs.rejected
        msg_type = Float64MultiArray if cfg.command_interface == "forward" else JointTrajectory
        self.pub_cmd = self._add("publisher", msg_type, cfg.command_topic, cmd_qos)
        self.pub_diag = self._add("publisher", DiagnosticArray, cfg.diagnostics_topic, 10)
        self._add("timer", 1.0 / cfg.diagnostics_hz, self._publish_diagnostics)
        self._add("service", SetBool, "~/emergency_stop", self._on_estop)

        self.safety = SafetyFilter(cfg.limits, 1.0 / cfg.executor.rate_hz)
        self.worker = ThreadWorker(policy, self.clock)
        self.executor = self._new_executor()
        # ~/pause: set by the service; `_idle` while the control loop publishes nothing (before its start,
        # paused, or dead); inputs received before `_fresh_after` (the last resume) are not this episode's
        self._paused = threading.Event()
        self._hold: tuple[str, str] | None = None  # an owner's hold (the lifecycle node while inactive)
        self._idle = threading.Event()
        self._idle.set()
        self._fresh_after = -np.inf
        self._add("service", SetBool, "~/pause", self._on_pause)
        self._spin_exec: SingleThreadedExecutor | None = None
        if self._owns_node:
            self._spin_exec = SingleThreadedExecutor(context=context)
            self._spin_exec.add_node(self.node)
        self.recorder: EpisodeRecorder | None = None
        self.record_tick_max_s = 0.0  # the longest time a control tick spent handing its step to the recorder
        if cfg.recorder.store:
            n = len(cfg.limits.names)
            schema = StoreSchema(cameras={c.name: (c.height, c.width) for c in cfg.cameras}, state_dim=n,
                                 action_dim=n, fps=cfg.executor.rate_hz)
            self.recorder = EpisodeRecorder(cfg.recorder, schema)
            self.executor.on_tick = self._record_tick
            self.executor.on_chunk = self.recorder.chunk
            self._add("subscription", Bool, cfg.recorder.label_topic, lambda m: self._end_episode(m.data), 10)
        self._add("service", SetBool, "~/end_episode", self._on_end_episode)
        self._threads = [threading.Thread(target=self._control, name="control", daemon=True)]
        if self._owns_node:
            self._threads.append(threading.Thread(target=self._spin, name="ros-spin", daemon=True))

    def _new_executor(self) -> ChunkExecutor:
        ex = ChunkExecutor(self.worker, self._observation, self._send, self.safety, self.cfg.executor, self.clock)
        ex.check_observation = self._plausible
        return ex

    def _add(self, kind: str, *args: Any) -> Any:
        entity = getattr(self.node, f"create_{kind}")(*args)
        self._entities.append((kind, entity))
        return entity

    # ---- incoming (validated in `RobotInputs`) ---------------------------------------------------
    def _joint_state_received(self, t: float, q: np.ndarray) -> None:
        if self.recorder is not None:
            self.recorder.joint_state(t, q)

    def _on_estop(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        if request.data:  # stopping is always allowed: it is the safe direction
            self.safety.emergency_stop("emergency_stop service")
            response.success, response.message = True, "stopped"
        elif self.cfg.allow_estop_clear:
            self.safety.clear_emergency_stop()
            response.success, response.message = True, "cleared"
        else:
            self.estop_clears_refused += 1
            self.node.get_logger().warning("refused to clear the emergency stop over ROS (allow_estop_clear: false)")
            response.success = False
            response.message = ("clearing over ROS is disabled (allow_estop_clear: false); "
                                "restart the node to clear" if self.safety.estopped else "not stopped")
        return response

    def _on_pause(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        response.success, response.message = (self._pause() if request.data else self._resume())
        return response

    def set_hold(self, hold: tuple[str, str] | None) -> None:
        """Hold the arm for an owner's reason (kind, detail), or follow the policy again with None; a pause
        holds on top of it and outlives neither."""
        self._hold = hold
        self._apply_hold()

    def _apply_hold(self) -> None:
        self.executor.external_hold = PAUSED if self._paused.is_set() else self._hold

    def _pause(self, timeout_s: float = 5.0) -> tuple[bool, str]:
        self._paused.set()
        self._apply_hold()
        if not self._idle.wait(timeout_s):
            return False, f"the arm did not come to rest within {timeout_s:g} s (still braking; call again)"
        return True, "paused: the arm is at rest and no commands are published"

    def _resume(self, timeout_s: float = 5.0) -> tuple[bool, str]:
        if not self._paused.is_set():
            return False, "not paused (call with true first)"
        if self.control_error is not None:
            return False, f"the control loop died ({self.control_error}): restart the node"
        if not self._idle.is_set():
            return False, "the arm is still braking from the pause: call again"
        end = time.monotonic() + timeout_s
        while self.worker.busy:  # the paused episode's last inference: its chunk is for a scene that is gone
            self.worker.poll()
            if time.monotonic() > end:
                return False, f"{INFERENCE_HANGS} after {timeout_s:g} s: call again"
            time.sleep(0.005)
        self.worker.policy.reset()
        self.executor = self._new_executor()
        self._fresh_after = self.clock.now()
        self._paused.clear()
        self._apply_hold()
        return True, "resumed: a new episode starts from the next joint state"

    def _end_episode(self, success: bool) -> str:
        if self.recorder is None:
            return "recording is off (no recorder.store in the config)"
        self.recorder.end_episode(bool(success))
        return f"episode ended ({'success' if success else 'failure'}); the next one starts now"

    def _on_end_episode(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        response.message = self._end_episode(request.data)
        response.success = self.recorder is not None
        return response

    def _record_tick(self, rec: TickRecord) -> None:
        t = time.perf_counter()
        images, instruction = self.inputs.images_and_instruction()
        assert self.recorder is not None
        self.recorder.tick(rec.scheduled, rec.command, rec.action, rec.chunk_id, rec.hold, images, instruction)
        self.record_tick_max_s = max(self.record_tick_max_s, time.perf_counter() - t)

    def _observation(self) -> Observation | None:
        s = self.inputs.snapshot()
        if s.q is None or len(s.images) < len(self.cfg.cameras) or (self.cfg.objects is not None and s.objects is None):
            return None
        if self.inputs.awaiting_instruction():
            self.node.get_logger().info(f"holding until the robot's instruction arrives on "
                                        f"{self.cfg.instruction_topic} (at most {self.cfg.instruction_wait_s} s, "
                                        "then the default)", throttle_duration_sec=1.0)
            return None
        if not s.instruction_received and self.cfg.instruction_wait_s > 0 and not self._warned_default:
            self._warned_default = True
            self.node.get_logger().warning(f"no instruction on {self.cfg.instruction_topic} within "
                                      f"{self.cfg.instruction_wait_s} s: using default_instruction "
                                      f"{self.cfg.default_instruction!r}")
        instruction = s.instruction
        if self.instructions is not None:
            ready = self.instructions.usable(instruction)
            if ready is None:
                self.node.get_logger().info("holding until the first instruction's embedding is ready",
                                            throttle_duration_sec=1.0)
                return None
            instruction = ready
        # Stamped with the oldest receipt time (joints, any camera, the object poses) on the executor's
        # clock: a dead camera or pose estimator holds the robot like dead joint states, and no clock
        # sync is needed.
        stamp = min([s.q_time, *s.image_times.values(), *([s.objects_time] if self.cfg.objects else [])])
        if stamp <= self._fresh_after:  # an input from before the last resume: the scene it saw is gone
            return None
        obs: Observation = {"images": s.images, "state": s.q.astype(np.float32),
                            "instruction": instruction, "timestamp": stamp}
        if self.cfg.objects is not None:  # received: checked above
            obs["objects"] = s.objects
        if s.qd is not None:
            obs["velocity"] = s.qd.astype(np.float32)
        return obs

    def _plausible(self, obs: Observation) -> tuple[str, str] | None:
        detail = implausible_joint_state(self.cfg.limits, obs["state"], obs.get("velocity"),
                                         self.cfg.joint_state_position_tolerance, self.cfg.joint_state_velocity_factor)
        return None if detail is None else ("implausible_joint_state", detail)

    # ---- outgoing ------------------------------------------------------------------------------
    def _send(self, command: np.ndarray) -> None:
        if self.cfg.command_interface == "forward":
            self.pub_cmd.publish(Float64MultiArray(data=[float(x) for x in command]))
            return
        q = self.executor.queue
        future = self.safety.preview(q.actions_between(q.start_tick, q.end_tick))
        dt = 1.0 / self.cfg.executor.rate_hz
        msg = JointTrajectory(joint_names=list(self.cfg.limits.names))
        for i, point in enumerate([command, *future]):
            sec, nanosec = duration_parts((i + 1) * dt)
            p = JointTrajectoryPoint(positions=[float(x) for x in point])
            p.time_from_start.sec, p.time_from_start.nanosec = sec, nanosec
            msg.points.append(p)
        self.pub_cmd.publish(msg)

    def _publish_diagnostics(self) -> None:
        st = self.executor.stats(window=int(10 * self.cfg.executor.rate_hz))
        st.update({f"rejected_{k}": float(v) for k, v in self.rejected.items()})
        st.update({f"holds_{k}": float(v) for k, v in self.executor.holds_by_kind.items()})
        st["estop_clears_refused"] = float(self.estop_clears_refused)
        if self.instructions is not None:
            st["instructions_embedded"] = float(self.instructions.n_embedded)
            st["instruction_embed_max_ms"] = 1e3 * self.instructions.embed_max_s
        if self.recorder is not None:
            st.update(self.recorder.counters())
            st["recorder_tick_max_ms"] = 1e3 * self.record_tick_max_s
        hold, detail = self.safety.hold_kind, self.safety.hold_detail
        dead = self.control_error or hold == "dead_inference"
        rec = self.recorder
        rec_problem = rec is not None and (not rec.alive or rec.last_error is not None)
        level = (DiagnosticStatus.ERROR if dead else DiagnosticStatus.WARN if hold or rec_problem
                 else DiagnosticStatus.OK)
        message = (f"control loop died: {self.control_error}" if self.control_error
                   else "paused: no commands" if self._paused.is_set() and self._idle.is_set()
                   else f"holding: {hold} ({detail})" if hold else "running")
        if rec is not None and not rec.alive:
            message += "; recorder dead (control goes on, nothing is recorded)"
        elif rec is not None and rec.last_error is not None:
            message += f"; recorder: {rec.last_error}"
        status = DiagnosticStatus(level=level, name=f"{self.node.get_name()}: chunk executor", message=message,
                                  hardware_id=self.cfg.executor.mode)
        # values stay numeric (consumers parse them as floats); reasons go in the message
        status.values = [KeyValue(key=k, value=f"{v:.6g}") for k, v in st.items()]
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.node.get_clock().now().to_msg()
        self.pub_diag.publish(msg)

    # ---- lifecycle -----------------------------------------------------------------------------
    def _spin(self) -> None:
        while not self._stop.is_set():
            self._spin_exec.spin_once(timeout_sec=0.05)

    def _control(self) -> None:
        while self._wait_for_start():  # an episode: from start (or resume) to a pause
            self.node.get_logger().info(f"control loop started at {self.cfg.executor.rate_hz:g} Hz, "
                                        f"mode {self.cfg.executor.mode}")
            self._idle.clear()
            try:
                self.executor.run(should_stop=lambda: self._stop.is_set() or (
                    self._paused.is_set() and self.safety.at_rest))
            except Exception as exc:  # no more commands: the controller keeps the last (safe) one
                self.control_error = f"{type(exc).__name__}: {exc}"
                self.node.get_logger().fatal(f"control loop died: {self.control_error}")
                return
            finally:
                self._idle.set()

    def _wait_for_start(self) -> bool:
        """Wait until not paused and the robot's position (received after the last resume) is known; the
        safety filter starts there. False when the node stops first."""
        while not self._stop.is_set():
            s = self.inputs.snapshot()
            if not self._paused.is_set() and s.q is not None and s.q_time > self._fresh_after:
                try:
                    self.safety.reset(s.q)
                    return True
                except ValueError as err:
                    self.node.get_logger().error(f"not starting: {err}", throttle_duration_sec=5.0)
            time.sleep(0.01)
        return False

    @property
    def started(self) -> bool:
        return self._threads[0].ident is not None

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            if t.is_alive():
                t.join(timeout=5.0)
        self.worker.close()
        if self.instructions is not None:
            self.instructions.close()
        if self.recorder is not None:
            self.recorder.close()
        if self._spin_exec is not None:
            self._spin_exec.shutdown()
        if self._owns_node:
            self.node.destroy_node()
            return
        for kind, entity in reversed(self._entities):
            getattr(self.node, f"destroy_{kind}")(entity)
        self._entities.clear()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="VLA policy node (async chunk executor + safety layer)")
    ap.add_argument("--config", type=Path, required=True, help="configs/deploy/*.yaml")
    ap.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    args, ros_args = ap.parse_known_args(argv)
    logging.basicConfig(level=logging.INFO)
    # SIGUSR1: every thread's stack to stderr (the node's log): how a hung inference shows where it hangs
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    cfg = load_deploy_config(args.config)
    policy = make_policy(cfg.policy, 1.0 / cfg.executor.rate_hz, len(cfg.limits.names))
    init_ros(ros_args, cfg.ros_domain_id)
    try:
        node = PolicyNode(cfg, policy)
    except KeyboardInterrupt:  # Ctrl-C while the node loads (the language model takes seconds)
        rclpy.try_shutdown()
        log.info("stopped on SIGINT before the node started")
        return
    run_node_until_stopped(node, args.duration)


if __name__ == "__main__":
    main()
