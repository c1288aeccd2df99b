"""Every deployed episode recorded: the MuJoCo bridge and the policy node with a recorder (each its own
process, over real DDS on localhost); the operator's label comes from the bridge's status, as a person's
would come from a button."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip("rclpy")
from std_srvs.srv import SetBool, Trigger  # noqa: E402

from real.recorder import load_sidecar  # noqa: E402
from real.stages import write_node_config  # noqa: E402
from tests.real.ros.helpers import stop_group, wait_for  # noqa: E402
from tests.real.ros.test_end_to_end import LOWER, ROOT, UPPER, Monitor, wrap  # noqa: E402
from tests.real.test_joint_vla import build_tiny_checkpoint  # noqa: E402
from vla.data.store import EpisodeStore  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.timeout(240)]


def call(mon: Monitor, client, request):
    assert client.wait_for_service(timeout_sec=20)
    future = client.call_async(request)
    wait_for(future.done, 10, "service reply")
    return future.result()


def test_deployed_episodes_are_stored_with_the_operators_label(tmp_path: Path, domain_id: int) -> None:
    store = tmp_path / "deployments.zarr"
    node_cfg = write_node_config(tmp_path / "node.yaml", build_tiny_checkpoint(tmp_path / "ckpt"), "torch",
                                 "aligned", 20.0, max_observation_age_s=0.3)
    cfg = yaml.safe_load(node_cfg.read_text())
    cfg["recorder"] = {"store": str(store), "task": "pick_place", "policy_version": 2}
    node_cfg.write_text(yaml.safe_dump(cfg))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    logs = {k: open(tmp_path / f"{k}.log", "w") for k in ("bridge", "node")}  # noqa: SIM115
    procs = [subprocess.Popen(wrap([sys.executable, "-m", "real.ros.bridge_node", "--config",
                                    str(ROOT / "configs/deploy/bridge.yaml"), "--seed", "3", "--horizon", "40"]),
                              cwd=ROOT, env=env, stdout=logs["bridge"], stderr=subprocess.STDOUT,
                              start_new_session=True),
             subprocess.Popen(wrap([sys.executable, "-m", "real.ros.policy_node", "--config", str(node_cfg)]),
                              cwd=ROOT, env=env, stdout=logs["node"], stderr=subprocess.STDOUT,
                              start_new_session=True)]
    mon = Monitor()
    end = mon.node.create_client(SetBool, "/vla_policy/end_episode")
    reset = mon.node.create_client(Trigger, "/bridge/reset")
    labels = []
    try:
        for episode in range(2):
            wait_for(lambda e=episode: mon.status.get("episode") == e and mon.status.get("done"), 90,
                     f"bridge episode {episode} to finish")
            labels.append(bool(mon.status["success"]))
            reply = call(mon, end, SetBool.Request(data=labels[-1]))
            assert reply.success, reply.message
            assert call(mon, reset, Trigger.Request()).success
        assert "recorder" not in mon.diag_message, mon.diag_message  # no recorder error or death reported
    finally:
        mon.close()
        for proc in reversed(procs):  # the node first: it flushes its recorder on SIGINT
            stop_group(proc)
        for f in logs.values():
            f.close()
    node_log = (tmp_path / "node.log").read_text()
    assert procs[1].returncode not in (3, None), node_log[-3000:]

    with EpisodeStore.open(store) as s:
        table = s.table()
        assert s.n_episodes == 2, node_log[-3000:]  # the third, unlabelled, is not stored
        assert list(table.success) == labels and set(table.task) == {"pick_place"}
        assert table.instruction[0] not in ("", cfg["default_instruction"])  # the one the bridge published
        for i in range(2):
            ep = s.episode(i)
            n = len(ep)
            assert n >= 30  # 40 ticks of task time plus the wait for the label, at 20 Hz
            assert ep.steps["images/agentview"].shape == (n, 84, 84, 3)
            assert ep.steps["images/agentview"].std() > 0  # real frames, not blanks
            ticks = np.diff(ep.steps["timestamp"]) / 0.05  # one control timeline (a late loop skips ticks)
            np.testing.assert_allclose(ticks, np.round(ticks), atol=1e-6)
            assert np.median(np.round(ticks)) == 1
            for key in ("state", "action"):
                assert np.all(ep.steps[key] >= LOWER - 1e-6) and np.all(ep.steps[key] <= UPPER + 1e-6), key
            assert set(ep.steps["policy_version"]) == {2}
            side = load_sidecar(store, i)
            assert side["chunks"].shape[2] == 8 and side["chunks"].shape[1] > 1 and len(side["chunks"]) >= 2
            assert side["step_chunk_id"].shape == (n,)
        moved = s.episode(0).steps["state"]
        assert np.abs(moved[-1, :7] - moved[0, :7]).max() > 0.01  # the recorded arm moved
