"""real/stages.py: the deploy stage's packaged configs and the ROS child processes' environment."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from real import stages
from vla.config import CONFIG_DIR, ConfigError
from vla.job import DeployStageConfig, JobConfig, JobContext


def test_deploy_configs_come_from_the_package():
    assert stages.NODE_CONFIG.is_file() and stages.BRIDGE_CONFIG.is_file()
    assert stages.NODE_CONFIG.parent == CONFIG_DIR / "deploy"


def test_ros_env_keeps_dds_local_and_finds_the_package_from_any_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.chdir(tmp_path)
    root = str(stages.PACKAGE_ROOT)
    # Only the working directory would have found the package: the children (run elsewhere) get it on PYTHONPATH.
    monkeypatch.setattr(sys, "path", [p for p in sys.path if os.path.realpath(p) != root] + [str(tmp_path)])
    env = stages.ros_env(42)
    assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST" and env["ROS_DOMAIN_ID"] == "42"
    assert env["PYTHONPATH"].split(os.pathsep)[0] == root
    # Installed (on sys.path, not as the working directory): nothing added.
    monkeypatch.setattr(sys, "path", [*sys.path, root])
    assert "PYTHONPATH" not in stages.ros_env(42)
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert stages.ros_env(42)["PYTHONPATH"] == os.pathsep.join([root, "/elsewhere"])


def test_a_wrong_deploy_policy_fails_at_load_before_any_stage_runs():
    import pytest

    from vla.config import ConfigError, load_config
    from vla.job import JobConfig

    with pytest.raises(ConfigError, match=r"deploy\.policy must be pretrained or refined, got 'best'"):
        load_config(JobConfig, "job", "default", ["deploy.policy=best"])
    with pytest.raises(ConfigError, match="needs the refine stage before deploy"):
        load_config(JobConfig, "job", "default", ["stages=[sim_demos,pretrain,export,deploy]", "deploy.poses=bridge"])
    cfg = load_config(JobConfig, "job", "default", ["stages=[sim_demos,pretrain,export,deploy]",
                                                    "deploy.policy=pretrained", "deploy.poses=bridge"])
    assert cfg.deploy.policy == "pretrained"


def test_deploying_a_refined_policy_that_is_no_checkpoint_is_one_line(tmp_path):
    # dsrl's refined version is the frozen base steered by an actor: a policy spec, nothing the ROS node loads
    ctx = JobContext(JobConfig(deploy=DeployStageConfig(policy="refined")), tmp_path,
                     results={"refine": {"method": "dsrl", "policy": "dsrl:ckpt=a,actor=b,mode=mean"}})
    with pytest.raises(ConfigError, match="dsrl made 'dsrl:ckpt=a,actor=b,mode=mean', not a checkpoint"):
        stages.deploy_stage(ctx)


def test_pose_errors_are_each_objects_median_and_the_median_lag() -> None:
    from real.stages import pose_errors

    pairs = [(np.array([1.0, 10.0]), 5.0), (np.array([3.0, 20.0]), 15.0), (np.array([2.0, 30.0]), 10.0)]
    assert pose_errors(pairs, "pick_place") == {"pose_cube_mm": 2.0, "pose_zone_mm": 20.0, "pose_lag_ms": 10.0,
                                                "pose_pairs": 3}
    assert pose_errors([], "pick_place")["pose_cube_mm"] is None
