from pathlib import Path

import pytest
import yaml

from real.config import deploy_config_from_dict, load_deploy_config, make_policy
from real.testing import SyntheticPolicy
from vla.interfaces import Policy

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "configs/deploy/policy_node.yaml"


def test_shipped_config_loads_and_builds_the_policy():
    cfg = load_deploy_config(SHIPPED)
    assert cfg.executor.mode == "aligned" and len(cfg.limits.names) == 6
    policy = make_policy(cfg.policy, 1 / cfg.executor.rate_hz, 6)
    assert isinstance(policy, SyntheticPolicy) and isinstance(policy, Policy)


def test_unknown_or_bad_keys_are_errors(tmp_path):
    raw = yaml.safe_load(SHIPPED.read_text())
    with pytest.raises(ValueError, match=r"unknown keys.*max_velocty"):
        deploy_config_from_dict({**raw, "executor": {**raw["executor"], "max_velocty": 1}})
    with pytest.raises(ValueError, match="command_interface"):
        deploy_config_from_dict({**raw, "command_interface": "effort"})
    with pytest.raises(ValueError, match="lacks the 'limits'"):
        deploy_config_from_dict({k: v for k, v in raw.items() if k != "limits"})
    with pytest.raises(ValueError, match="factory"):
        make_policy({"checkpoint": "x"}, 0.05, 6)
    with pytest.raises(ValueError, match=r"recorder: unknown keys.*polcy_version"):
        deploy_config_from_dict({**raw, "recorder": {"store": "x.zarr", "polcy_version": 1}})


def test_recording_is_off_unless_a_store_is_named():
    raw = yaml.safe_load(SHIPPED.read_text())
    assert load_deploy_config(SHIPPED).recorder.store == ""
    rec = {"store": "runs/deploy.zarr", "task": "pick", "policy_version": 4}
    cfg = deploy_config_from_dict({**raw, "recorder": rec})
    assert (cfg.recorder.store, cfg.recorder.task, cfg.recorder.policy_version) == ("runs/deploy.zarr", "pick", 4)


def test_limits_from_urdf(tmp_path):
    urdf = tmp_path / "arm.urdf"
    urdf.write_text('<robot name="r"><joint name="a" type="revolute">'
                    '<limit lower="-1" upper="1" velocity="2" effort="1"/></joint></robot>')
    raw = yaml.safe_load(SHIPPED.read_text())
    raw["limits"] = {"urdf": str(urdf), "names": ["a"], "max_acceleration": 4.0}
    assert deploy_config_from_dict(raw).limits.max_velocity.tolist() == [2.0]
