"""The main job's `perception` stage and the deploy stage's choice of pose source."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.perception_stage import perception_stage
from vla.config import ConfigError, load_config
from vla.job import DemoStageConfig, JobConfig, JobContext, PerceptionStageConfig
from vla.perception.estimator import PoseEstimator


def test_the_stage_collects_labelled_frames_trains_and_measures_an_estimator(tmp_path: Path) -> None:
    cfg = JobConfig(demos=DemoStageConfig(obs_mode="state", image_size=24, workers=1),
                    perception=PerceptionStageConfig(episodes=2, eval_episodes=1, steps=2,
                                                     overrides=["channels=[8,8]", "keypoints=4", "hidden=16"]))
    out = perception_stage(JobContext(cfg, tmp_path / "job"))
    est = PoseEstimator.load(out["estimator"])
    assert est.objects == ("cube", "zone") and est.image_size["agentview"] == (24, 24)
    assert "cube error mm (median, p90)" in out and "report seeds" in out["measured on"]
    with pytest.raises(ValueError, match="reads no object poses"):
        perception_stage(JobContext(JobConfig(), tmp_path / "job2"))


@pytest.mark.parametrize("overrides, match", [
    (["stages=[sim_demos,pretrain,export,deploy]", "deploy.poses=estimator"], "needs the perception stage"),
    (["stages=[sim_demos,perception,pretrain,export,deploy]", "deploy.poses=estimator", "demos.obs_mode=image"],
     "reads no object poses"),
    (["deploy.poses=truth"], "bridge or estimator"),
    (["perception.randomize=camera_shfit:1"], "perception.randomize"),
    (["deploy.pose_smoothing=0"], "pose_smoothing"),
])
def test_the_deploy_stages_pose_source_is_checked_at_load(overrides: list[str], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        load_config(JobConfig, "job", "default", overrides)
