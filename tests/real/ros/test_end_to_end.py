"""End to end over real DDS on localhost: the MuJoCo robot bridge and the policy node (each its own
process, under `offhost-traffic` when available) with a real tiny VLA checkpoint behind the
joint-space adapter.

Checked on every command message on the robot's topic: 8 finite values inside the joint limits.
Faults: an emergency stop holds the arm; a dead sensor bus (stale observations) makes the policy
node hold; a killed policy node leaves the arm holding its last target. The episode ends with a
result (success or not) on /task/status.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip("rclpy")
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402
from std_srvs.srv import SetBool  # noqa: E402

from real.ros.spinner import BackgroundSpinner  # noqa: E402
from real.stages import write_node_config  # noqa: E402
from tests.real.ros.helpers import stop_group, wait_for  # noqa: E402
from tests.real.test_joint_vla import build_tiny_checkpoint  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[3]
OFFHOST = ROOT.parent / "shared" / "tools" / "offhost-traffic"
LIMITS = yaml.safe_load((ROOT / "configs/deploy/native_arm.yaml").read_text())["limits"]
LOWER, UPPER = np.array(LIMITS["lower"]), np.array(LIMITS["upper"])
CMD_TOPIC = "/forward_position_controller/commands"


def traced() -> bool:
    """Whether this process already runs under a tracer (CI runs the ROS tests under offhost-traffic,
    which follows every child; a second strace inside would only slow the start-up past the timeouts)."""
    status = Path("/proc/self/status")
    if not status.exists():
        return False
    return any(line.split()[1:2] != ["0"] for line in status.read_text().splitlines() if line.startswith("TracerPid:"))


def wrap(cmd: list[str]) -> list[str]:
    """Run under offhost-traffic (exit 3 = something left loopback) when strace is there."""
    return [str(OFFHOST), *cmd] if OFFHOST.exists() and shutil.which("strace") and not traced() else cmd


class Monitor:
    """Sees everything on the robot side: commands (checked one by one), joint states, task status."""

    def __init__(self) -> None:
        self.ctx = rclpy.context.Context()
        rclpy.init(context=self.ctx)
        self.node = rclpy.create_node("e2e_monitor", context=self.ctx)
        self.lock = threading.Lock()
        self.commands: list[np.ndarray] = []
        self.bad: list[str] = []
        self.q: np.ndarray | None = None
        self.qd: np.ndarray | None = None
        self.n_js = 0  # joint-state messages seen: a stall of the bridge or of DDS shows as no new ones
        self.status: dict = {}
        self.diag_message = ""
        self.cmd_sub = self.node.create_subscription(Float64MultiArray, CMD_TOPIC, self._on_cmd, 100)
        self.node.create_subscription(JointState, "/joint_states", self._on_js, qos_profile_sensor_data)
        self.node.create_subscription(String, "/task/status", self._on_status, 10)
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diag, 10)
        self.estop = self.node.create_client(SetBool, "/vla_policy/emergency_stop")
        self.dropout = self.node.create_client(SetBool, "/bridge/sensor_dropout")
        self.spinner = BackgroundSpinner(self.node, self.ctx)

    def _on_cmd(self, msg: Float64MultiArray) -> None:
        c = np.array(msg.data)
        with self.lock:
            if c.shape != (8,) or not np.all(np.isfinite(c)) or np.any(c < LOWER) or np.any(c > UPPER):
                self.bad.append(repr(c))
            self.commands.append(c)

    def _on_js(self, msg: JointState) -> None:
        with self.lock:
            self.q = np.array(msg.position)
            self.qd = np.array(msg.velocity)
            self.n_js += 1

    def _on_status(self, msg: String) -> None:
        with self.lock:
            self.status = json.loads(msg.data)

    def _on_diag(self, msg: DiagnosticArray) -> None:
        if msg.status and "chunk executor" in msg.status[0].name:
            with self.lock:
                self.diag_message = msg.status[0].message

    def n_commands(self) -> int:
        with self.lock:
            return len(self.commands)

    def commands_since(self, n: int) -> np.ndarray:
        with self.lock:
            return np.stack(self.commands[n:])

    def joints(self) -> np.ndarray:
        with self.lock:
            return self.q.copy()

    def call(self, client, on: bool) -> None:
        assert client.wait_for_service(timeout_sec=10)
        future = client.call_async(SetBool.Request(data=on))
        wait_for(future.done, 10, "service reply")
        assert future.result().success

    def close(self) -> None:
        self.spinner.close()
        self.node.destroy_node()
        rclpy.shutdown(context=self.ctx)


def descendant_python(pid: int) -> int:
    """The python process under the offhost-traffic wrapper (bash -> strace -> python)."""
    frontier, seen = [pid], []
    while frontier:
        p = frontier.pop()
        seen.append(p)
        for task in Path(f"/proc/{p}/task").iterdir():
            frontier += [int(c) for c in (task / "children").read_text().split()]
    pythons = [p for p in seen if "python" in Path(f"/proc/{p}/comm").read_text()]
    return pythons[-1] if pythons else pid


def test_vla_drives_the_bridge_over_dds(tmp_path, domain_id) -> None:
    ckpt = build_tiny_checkpoint(tmp_path / "ckpt")
    node_cfg = write_node_config(tmp_path / "node.yaml", ckpt, "torch", "aligned", 20.0,
                                 max_observation_age_s=0.3)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    logs = {k: open(tmp_path / f"{k}.log", "w") for k in ("bridge", "node")}  # noqa: SIM115
    bridge = subprocess.Popen(wrap([sys.executable, "-m", "real.ros.bridge_node", "--config",
                                    str(ROOT / "configs/deploy/bridge.yaml"), "--seed", "5", "--horizon", "260"]),
                              cwd=ROOT, env=env, stdout=logs["bridge"], stderr=subprocess.STDOUT,
                              start_new_session=True)
    node = subprocess.Popen(wrap([sys.executable, "-m", "real.ros.policy_node", "--config", str(node_cfg)]),
                            cwd=ROOT, env=env, stdout=logs["node"], stderr=subprocess.STDOUT,
                            start_new_session=True)
    mon = Monitor()
    try:
        wait_for(lambda: mon.q is not None, 40, "joint states from the bridge")
        q_home = mon.joints()
        wait_for(lambda: mon.n_commands() >= 30, 60, "30 commands from the policy node")
        assert mon.status["accepted"] > 0 and mon.status["step"] > 0
        wait_for(lambda: np.abs(mon.joints()[:7] - q_home[:7]).max() > 0.01, 10, "the arm to move")

        # emergency stop: the policy node brakes to a standstill and stays there
        mon.call(mon.estop, True)
        wait_for(lambda: "estop" in mon.diag_message, 5, "diagnostics reporting the emergency stop")
        time.sleep(0.3)
        n = mon.n_commands()
        q_a = mon.joints()
        time.sleep(0.6)
        held = mon.commands_since(n)
        assert len(held) >= 5
        np.testing.assert_allclose(held, np.broadcast_to(held[0], held.shape), atol=1e-12)
        np.testing.assert_allclose(mon.joints()[:7], q_a[:7], atol=5e-3)
        mon.call(mon.estop, False)
        wait_for(lambda: "running" in mon.diag_message, 10, "running again")

        # dead sensor bus: stale observations -> the policy node holds
        mon.call(mon.dropout, True)
        time.sleep(0.8)
        n = mon.n_commands()
        time.sleep(0.6)
        held = mon.commands_since(n)
        assert len(held) >= 5  # still commanding (holding), not silent
        np.testing.assert_allclose(held, np.broadcast_to(held[0], held.shape), atol=1e-12)
        wait_for(lambda: "stale_observation" in mon.diag_message, 5, "diagnostics reporting stale observations")
        mon.call(mon.dropout, False)
        wait_for(lambda: "running" in mon.diag_message, 10, "running again after the sensors return")

        # the policy node dies: the bridge keeps the last target, the arm holds
        os.kill(descendant_python(node.pid), signal.SIGKILL)
        node.wait(10)
        time.sleep(0.5)

        def settled() -> bool:
            # the bridge slews its applied target to the last command at max_step per tick, so the
            # arm may still be finishing that motion when the node dies (a loaded CI once: 12 mrad).
            # Settled needs fresh joint states at rest: a loaded CI once stalled the bridge (or DDS)
            # for the whole window, so an unchanged last message looked still while the arm was
            # still 0.39 rad from its target.
            with mon.lock:
                n0 = mon.n_js
            q0 = mon.joints()[:7]
            time.sleep(0.3)
            with mon.lock:
                fresh, qd = mon.n_js - n0, mon.qd
            return bool(fresh >= 3 and np.abs(mon.joints()[:7] - q0).max() < 1e-3
                        and qd is not None and np.abs(qd[:7]).max() < 1e-2)

        wait_for(settled, 10, "the arm to finish its last commanded motion")
        q_a, n = mon.joints(), mon.n_commands()
        with mon.lock:
            n_js = mon.n_js
        time.sleep(0.6)
        assert mon.n_commands() == n
        with mon.lock:
            assert mon.n_js > n_js, "no joint states while the arm should be holding"
        np.testing.assert_allclose(mon.joints()[:7], q_a[:7], atol=5e-3)

        # the episode reports its result at the horizon
        wait_for(lambda: mon.status.get("done"), 30, "the episode to end")
        st = mon.status
        assert isinstance(st["success"], bool) and st["done_step"] == (260 if not st["success"] else st["done_step"])
        assert st["commands_rejected"] == 0 and st["accepted"] >= 30
        with mon.lock:
            assert not mon.bad, f"bad commands reached the robot topic: {mon.bad[:3]}"
            assert len(mon.commands) >= 30
    finally:
        mon.close()
        for proc in (node, bridge):
            stop_group(proc)
        for f in logs.values():
            f.close()
    bridge_log = (tmp_path / "bridge.log").read_text()
    assert bridge.returncode != 3 and node.returncode != 3, "DDS traffic left loopback:\n" + bridge_log[-2000:]
    assert bridge.returncode == 0, bridge_log[-3000:]


@pytest.mark.parametrize("obs_mode, poses, episodes", [("image", "bridge", 1), ("state", "bridge", 2),
                                                       ("state", "estimator", 1)])
def test_deploy_stage_runs_an_episode(tmp_path, obs_mode, poses, episodes, domain_id) -> None:
    """The main job's `deploy` stage: bridge + policy node processes, episodes, summary figures; one policy
    node for all episodes, paused while the bridge resets and resumed at the reset arm. With
    obs_mode=state the policy reads object poses: without them it would never command, and the episode
    would not start. With deploy.poses=estimator they come from the pose node over the bridge's camera
    images, and the bridge publishes its truth only where the policy does not read it."""
    from real.stages import TRUTH_TOPIC, deploy_stage
    from tests.vla.perception.helpers import debug_estimator
    from vla.job import DemoStageConfig, DeployStageConfig, EvalStageConfig, JobConfig, JobContext

    ckpt = build_tiny_checkpoint(tmp_path / "ckpt", objects=obs_mode == "state")
    results: dict = {"pretrain": {"checkpoint": str(ckpt)}}
    if poses == "estimator":
        results["perception"] = {"estimator": debug_estimator(tmp_path, image_size=84)}
    # the fixture's domain: under pytest-xdist each worker has its own range (a draw from 1-100 in both
    # workers could put this test's nodes in another test's domain)
    ctx = JobContext(JobConfig(demos=DemoStageConfig(obs_mode=obs_mode), eval=EvalStageConfig(temporal_ensemble=-0.01),
                               deploy=DeployStageConfig(backend="torch", ros_domain_id=domain_id, timeout_s=90,
                                                        poses=poses, episodes=episodes)),
                     tmp_path / "job", results=results)
    out = deploy_stage(ctx)
    node_cfg = yaml.safe_load((tmp_path / "job/deploy/policy_node.yaml").read_text())
    # the executor weighs the chunks at the rate the job evaluated the policy with, not the node preset's 0.3
    assert node_cfg["executor"]["ensemble_rate"] == -0.01 and out["ensemble rate"] == -0.01
    if obs_mode == "state":
        assert node_cfg["objects"] == {"topic": "/perception/object_poses", "count": 2}
        assert node_cfg["policy"]["objects_task"] == "pick_place"
        assert out["reads simulator state"] is (poses == "bridge")
    else:
        assert "objects" not in node_cfg and out["reads simulator state"] is False
    if poses == "estimator":
        # the truth goes only to the watcher, which measures the pose node against it tick by tick
        assert yaml.safe_load((tmp_path / "job/deploy/bridge.yaml").read_text())["objects_topic"] == TRUTH_TOPIC
        assert "pose node" in out["inputs"] and "pose node up" in (tmp_path / "job/deploy/pose_node.log").read_text()
        assert out["pose cube mm"] > 0 and out["pose zone mm"] > 0 and out["pose lag ms"] >= 0
    assert out["success"] in {f"{k}/{episodes}" for k in range(episodes + 1)} and out["mode"] == "ensemble"
    assert 0 < out["steps"] <= 200 and out["commands rejected"] == 0
    assert out["starved ticks"] is not None and out["jitter p99 ms"] is not None
    done = [json.loads(line) for line in (tmp_path / "job/deploy/episodes.jsonl").read_text().splitlines()]
    assert [e["seed"] for e in done] == [2_000_000 + k for k in range(episodes)]
    assert all(e["done"] and e["accepted"] > 0 for e in done)
    node_log = (tmp_path / "job/deploy/policy_node.log").read_text()
    assert node_log.count("control loop started") == episodes  # one node, restarted once per episode


@pytest.mark.timeout(420)  # two node start-ups (the language model loads in 2-16 s) and two hung nodes' stops
def test_a_policy_node_whose_inference_hangs_is_replaced_for_the_next_episode(tmp_path, domain_id) -> None:
    """An inference that never returns (here: 30 s of injected delay, far past the executor's 2 s timeout)
    holds the arm, and the node cannot resume a new episode over it. The deploy stage dumps the node's
    threads into its log, starts a fresh node for the next episode and says so, instead of failing the job
    with a traceback."""
    from real.stages import run_deploy

    ckpt = build_tiny_checkpoint(tmp_path / "ckpt")
    out = run_deploy(ckpt, tmp_path / "deploy", episodes=2, mode="ensemble", backend="torch", domain_id=domain_id,
                     timeout_s=60, delay_s=30.0, horizon=40)
    assert out["episodes"] == 2 and out["policy_node_restarts"] == 1
    assert [r["policy_node_restarted"] for r in out["records"]] == [False, True]
    assert out["success"] == "0/2"  # a held arm does not do the task
    node_log = (tmp_path / "deploy/policy_node.log").read_text()
    assert "inference_timeout" in node_log
    assert "most recent call first" in node_log  # faulthandler's dump of the hung node's threads
    assert node_log.count("control loop started") == 2  # the first node's episode, then the fresh node's
