"""The managed policy node: ROS parameters from a params file (what `ros2 param` reads and sets), and the
lifecycle transitions (what `ros2 lifecycle set` calls) against a test arm over real DDS on localhost."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from real.config import deploy_config_from_dict
from real.ros.params import flatten, params_file, unflatten

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = sorted((ROOT / "configs/deploy").glob("*.yaml"))


@pytest.mark.parametrize("path", [p for p in DEPLOY if "policy:" in p.read_text()], ids=lambda p: p.name)
def test_parameters_carry_every_deploy_config_exactly(path: Path) -> None:
    raw = yaml.safe_load(path.read_text())
    flat = flatten(raw)
    assert all(v is not None and not isinstance(v, dict) for v in flat.values())  # ROS parameter types only
    # str: the limits hold numpy arrays, whose == is elementwise
    assert str(dataclasses.asdict(deploy_config_from_dict(unflatten(flat)))) == str(dataclasses.asdict(
        deploy_config_from_dict(raw)))
    assert "ros__parameters" in params_file(raw)


def test_parameters_carry_the_object_pose_section() -> None:
    raw = yaml.safe_load((ROOT / "configs/deploy/native_arm.yaml").read_text())
    raw = {**raw, "objects": {"topic": "/poses", "count": 2, "frame_id": "base"},
           "policy": {**raw["policy"], "objects_task": "pick_place"}}
    flat = flatten(raw)
    assert flat["objects.topic"] == "/poses" and flat["policy.objects_task"] == "pick_place"
    cfg = deploy_config_from_dict(unflatten(flat))
    assert cfg.objects is not None and (cfg.objects.topic, cfg.objects.count, cfg.objects.frame_id) == ("/poses", 2,
                                                                                                      "base")
    assert str(dataclasses.asdict(cfg)) == str(dataclasses.asdict(deploy_config_from_dict(raw)))


def test_bad_parameters_are_named() -> None:
    raw = yaml.safe_load((ROOT / "configs/deploy/native_arm.yaml").read_text())
    flat = flatten(raw)
    with pytest.raises(ValueError, match=r"executor: unknown keys \['mdoe'\]"):
        deploy_config_from_dict(unflatten({**flat, "executor.mdoe": "sync"}))
    with pytest.raises(ValueError, match=r"cameras\.side\.\* name a camera missing from camera_names"):
        unflatten({**flat, "cameras.side.topic": "/side"})
    with pytest.raises(ValueError, match="'executor' is a value"):
        unflatten({"executor": 1, "executor.mode": "sync"})


rclpy = pytest.importorskip("rclpy")
from lifecycle_msgs.msg import Transition  # noqa: E402
from lifecycle_msgs.srv import ChangeState, GetState  # noqa: E402
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import GetParameters, SetParameters  # noqa: E402

from tests.real.ros.helpers import wait_for  # noqa: E402
from tests.real.ros.test_policy_node import FakeArm, write_config  # noqa: E402


class Operator:
    """What `ros2 lifecycle` and `ros2 param` do: the node's standard services."""

    def __init__(self, node) -> None:
        self.node = node
        self.change = node.create_client(ChangeState, "/vla_policy/change_state")
        self.state = node.create_client(GetState, "/vla_policy/get_state")
        self.get = node.create_client(GetParameters, "/vla_policy/get_parameters")
        self.set = node.create_client(SetParameters, "/vla_policy/set_parameters")

    def _call(self, client, request, attempts: int = 1):
        """`attempts` > 1 only for idempotent queries: a request sent just after discovery can be lost
        while the reply path is still being matched (DDS), so it is sent again."""
        assert client.wait_for_service(timeout_sec=20), client.srv_name
        for attempt in range(attempts):
            future = client.call_async(request)
            try:
                wait_for(future.done, 20 if attempt == attempts - 1 else 3, f"{client.srv_name} reply")
                return future.result()
            except AssertionError:
                if attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")

    def transition(self, tid: int) -> bool:
        """One lifecycle transition. If its reply is lost (see `_call`), the node's state tells whether
        it happened; only a transition that did not happen is sent again."""
        target = {Transition.TRANSITION_CONFIGURE: "inactive", Transition.TRANSITION_ACTIVATE: "active",
                  Transition.TRANSITION_DEACTIVATE: "inactive", Transition.TRANSITION_CLEANUP: "unconfigured"}[tid]
        assert self.change.wait_for_service(timeout_sec=20)
        for _ in range(3):
            future = self.change.call_async(ChangeState.Request(transition=Transition(id=tid)))
            try:
                wait_for(future.done, 5, "change_state reply")
                return future.result().success
            except AssertionError:
                if self.current() == target:
                    return True
        raise AssertionError(f"no reply to transition {tid}")

    def current(self) -> str:
        return self._call(self.state, GetState.Request(), attempts=5).current_state.label

    def params(self, names: list[str]) -> list:
        return self._call(self.get, GetParameters.Request(names=names), attempts=5).values

    def set_string(self, name: str, value: str):
        p = Parameter(name=name, value=ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value))
        return self._call(self.set, SetParameters.Request(parameters=[p]), attempts=3).results[0]


def stop(proc: subprocess.Popen) -> str:
    """SIGTERM (the node stops its control loop, then ROS), SIGKILL if it does not exit; its output."""
    proc.terminate()
    try:
        return proc.communicate(timeout=20)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()[0]


def commands_during(arm: FakeArm, seconds: float) -> np.ndarray:
    n = len(arm.commands)
    time.sleep(seconds)
    with arm.lock:
        return np.array(arm.commands[n:])


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_lifecycle_transitions_and_ros_parameters(tmp_path: Path, domain_id: int) -> None:
    raw = yaml.safe_load(write_config(tmp_path, "forward").read_text())
    params = tmp_path / "vla.params.yaml"
    params.write_text(params_file(raw))
    arm = FakeArm("forward")
    proc = subprocess.Popen([sys.executable, "-m", "real.ros.lifecycle_node", "--ros-args", "--params-file",
                             str(params)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    op = Operator(arm.node)
    try:
        assert op.current() == "unconfigured"
        mode, names, kind = op.params(["executor.mode", "limits.names", "policy.kind"])
        assert (mode.string_value, list(names.string_array_value), kind.string_value) == (
            raw["executor"]["mode"], raw["limits"]["names"], "synthetic")
        assert len(commands_during(arm, 0.5)) == 0

        assert op.transition(Transition.TRANSITION_CONFIGURE) and op.current() == "inactive"
        assert len(commands_during(arm, 0.5)) == 0  # the policy is loaded, nothing is commanded
        assert not op.set_string("executor.mode", "sync").successful  # configured: refused

        assert op.transition(Transition.TRANSITION_ACTIVATE) and op.current() == "active"
        wait_for(lambda: len(arm.commands) >= 20, 20, "commands once active")
        moving = commands_during(arm, 0.5)
        assert np.abs(np.diff(moving, axis=0)).max() > 1e-4  # the arm follows the policy

        assert op.transition(Transition.TRANSITION_DEACTIVATE) and op.current() == "inactive"
        time.sleep(1.0)  # braking to a stop
        held = commands_during(arm, 0.5)
        assert len(held) >= 5  # still commanding: holding, not silent
        np.testing.assert_allclose(held, np.broadcast_to(held[0], held.shape), atol=1e-12)
        wait_for(lambda: "inactive" in arm.diag_message, 5, "diagnostics saying why it holds")
        # a pause and a resume while inactive: the new episode still holds for the lifecycle state
        assert arm.pause(True)[0] and len(commands_during(arm, 0.3)) == 0
        assert arm.pause(False)[0]
        time.sleep(1.0)
        held = commands_during(arm, 0.5)
        assert len(held) >= 5 and np.abs(np.diff(held, axis=0)).max() < 1e-12
        wait_for(lambda: "inactive" in arm.diag_message, 5, "the resumed node holding for the lifecycle state")

        assert op.transition(Transition.TRANSITION_ACTIVATE)
        time.sleep(1.0)
        assert np.abs(np.diff(commands_during(arm, 0.5), axis=0)).max() > 1e-4  # moving again

        assert op.transition(Transition.TRANSITION_DEACTIVATE) and op.transition(Transition.TRANSITION_CLEANUP)
        assert op.current() == "unconfigured"
        time.sleep(0.3)
        assert len(commands_during(arm, 0.5)) == 0
        assert op.set_string("executor.mode", "bogus").successful  # unconfigured: accepted, applied at configure
        assert not op.transition(Transition.TRANSITION_CONFIGURE)  # ... where the bad value fails it
        assert op.current() == "unconfigured" and proc.poll() is None
    finally:
        arm.close()
        out = stop(proc)
    assert "configure failed" in out and "bogus" in out, out[-2000:]  # the log names the bad value


def launch_command() -> list[str]:
    """The command the launch file runs, read from its source (system-ROS `launch` is not installable here)."""
    import ast

    tree = ast.parse((ROOT / "real/ros/launch/vla_policy.launch.py").read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description")
    return [c.value for c in ast.walk(fn) if isinstance(c, ast.Constant) and isinstance(c.value, str)
            and c.value.startswith(("-", "real."))]


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_launch_files_command_starts_an_active_node(tmp_path: Path, domain_id: int) -> None:
    words = launch_command()
    assert {"-m", "real.ros.lifecycle_node", "--name", "--autostart", "--ros-args", "--params-file"} <= set(words)
    params = tmp_path / "vla.params.yaml"
    params.write_text(params_file(yaml.safe_load(write_config(tmp_path, "forward").read_text())))
    arm = FakeArm("forward")
    proc = subprocess.Popen([sys.executable, "-m", "real.ros.lifecycle_node", "--name", "vla_policy", "--autostart",
                             "--ros-args", "--params-file", str(params)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: len(arm.commands) >= 20, 40, "commands from the autostarted node")
        assert Operator(arm.node).current() == "active"
    finally:
        arm.close()
        out = stop(proc)
    assert proc.returncode in (0, -15), out[-2000:]
