"""real/stages.py: the deploy stage's packaged configs and the ROS child processes' environment."""

from __future__ import annotations

import os
import sys

from real import stages
from vla.config import CONFIG_DIR


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
