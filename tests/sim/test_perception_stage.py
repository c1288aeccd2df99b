"""The main job's `perception` stage and the deploy stage's choice of pose source."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.perception_stage import perception_stage
from vla.config import ConfigError, load_config
from vla.job import DemoStageConfig, JobConfig, JobContext, PerceptionStageConfig
from vla.perception.estimator import PoseEstimator

SMALL = ["channels=[8,8]", "keypoints=4", "hidden=16"]


def test_the_stage_collects_labelled_frames_trains_and_measures_an_estimator(tmp_path: Path) -> None:
    cfg = JobConfig(demos=DemoStageConfig(obs_mode="state", image_size=24, workers=1),
                    perception=PerceptionStageConfig(episodes=2, eval_episodes=1, steps=2, overrides=SMALL,
                                                     policy_episodes=0))
    out = perception_stage(JobContext(cfg, tmp_path / "job"))
    est = PoseEstimator.load(out["estimator"])
    assert est.objects == ("cube", "zone") and est.image_size["agentview"] == (24, 24)
    assert "cube error mm (median, p90)" in out and "report seeds" in out["measured on"]
    assert "estimated_success" not in out
    again = perception_stage(JobContext(cfg, tmp_path / "job"))  # a re-run replaces its stores, never appends
    assert again["frames"] == out["frames"] and again["measured on"] == out["measured on"]
    with pytest.raises(ValueError, match="reads no object poses"):
        perception_stage(JobContext(JobConfig(), tmp_path / "job2"))


def test_the_stage_measures_the_deployed_policy_on_its_estimates_against_the_truth(tmp_path: Path) -> None:
    """The policy the deploy stage runs, on the estimator's poses and on the simulator's, on the same seeds; and
    its own rollouts, with their true poses, among the estimator's training frames."""
    from sim.perception_stage import COLLECT_OFFSET, POLICY_OFFSET
    from vla.data.store import EpisodeStore
    from vla.job import DeployStageConfig
    from vla.train.pretrain import run_training

    cfg = JobConfig(demos=DemoStageConfig(obs_mode="state", image_size=24, workers=1),
                    deploy=DeployStageConfig(policy="pretrained"),
                    perception=PerceptionStageConfig(episodes=2, eval_episodes=1, steps=2, overrides=SMALL,
                                                     policy_episodes=2))
    ctx = JobContext(cfg, tmp_path / "job")
    cfg.perception.policy_episodes = 0  # first the estimator's store, on which the debug policy trains
    perception_stage(ctx)
    result = run_training(ctx.out_dir / "perception" / "train.zarr", tmp_path / "train", "tiny", "debug",
                          ["train.steps=2", "train.batch_size=2", "data.val_fraction=0"])
    ctx.results["pretrain"] = {"checkpoint": str(result.last_checkpoint)}
    cfg.perception.policy_episodes = 2
    cfg.perception.policy_rollouts = 2
    out = perception_stage(ctx)
    table = EpisodeStore.open(ctx.out_dir / "perception" / "train.zarr").table()
    assert list(table.source) == ["demo", "demo", "rollout", "rollout"]  # replaced, not appended to the first run's
    assert list(table.seed) == [COLLECT_OFFSET, COLLECT_OFFSET + 1, POLICY_OFFSET, POLICY_OFFSET + 1]
    assert out["policy rollouts"].startswith("2 of the pretrained policy")
    assert out["policy"] == "pretrained" and out["success, estimated poses"].endswith("/2")
    assert "cube error mm in the policy's episodes (successes, failures)" in out
    assert 0.0 <= out["estimated_success"] <= 1.0 and 0.0 <= out["ground_truth_success"] <= 1.0
    summary = (ctx.out_dir / "perception" / "policy_estimated" / "summary.json").read_text()
    assert '"estimated_poses"' in summary and "perception/estimator" in summary
    truth = ctx.out_dir / "perception" / "policy_truth" / "summary.json"  # no eval stage ran: measured here
    assert truth.exists()


@pytest.mark.parametrize("overrides, match", [
    (["stages=[sim_demos,pretrain,export,deploy]", "deploy.poses=estimator"], "needs the perception stage"),
    (["stages=[sim_demos,perception,pretrain,export,deploy]", "deploy.poses=estimator", "demos.obs_mode=image"],
     "reads no object poses"),
    (["deploy.poses=truth"], "bridge or estimator"),
    (["perception.randomize=camera_shfit:1"], "perception.randomize"),
    (["deploy.pose_smoothing=0"], "pose_smoothing"),
    (["perception.policy_rollouts=-1"], "policy_rollouts >= 0"),
    (["stages=[sim_demos,stats,pretrain,perception,refine]"], "refine stage before perception"),
])
def test_the_deploy_stages_pose_source_is_checked_at_load(overrides: list[str], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        load_config(JobConfig, "job", "default", overrides)


def test_a_finished_job_can_deploy_again_alone_with_its_earlier_estimator(tmp_path: Path) -> None:
    """overwrite=false stages=[deploy]: the perception and refine stages may be the finished job's; without
    their results the stage says which one is missing instead of a KeyError."""
    from real.stages import deploy_stage

    cfg = load_config(JobConfig, "job", "default", ["overwrite=false", "stages=[deploy]"])
    assert cfg.deploy.poses == "estimator" and cfg.deploy.policy == "refined"
    with pytest.raises(ConfigError, match="needs the perception stage"):
        load_config(JobConfig, "job", "default", ["stages=[deploy]"])
    with pytest.raises(ConfigError, match="no refine result"):
        deploy_stage(JobContext(cfg, tmp_path / "job"))
    ctx = JobContext(cfg, tmp_path / "job2", results={"refine": {"method": "hg_dagger", "checkpoint": str(tmp_path)}})
    (tmp_path / "onnx").mkdir()
    with pytest.raises(ConfigError, match="no perception result"):
        deploy_stage(ctx)
