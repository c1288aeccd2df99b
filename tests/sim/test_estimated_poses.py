"""A state policy's object poses from a pose estimator over the episode's own camera frames."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sim.estimated_poses import EstimatedPosesEnv, pose_error_summary, without_pose_kinds
from sim.evaluate import EvalConfig, run_evaluation
from tests.vla.perception.helpers import CAMERAS, debug_estimator
from vla.perception.estimator import PoseEstimator
from vla.registry import TASKS


@pytest.fixture(scope="module")
def estimator(tmp_path_factory: pytest.TempPathFactory) -> str:
    return debug_estimator(tmp_path_factory.mktemp("est"))


def test_the_state_reads_the_estimators_poses_of_the_rendered_frames_and_the_truth_stays(estimator: str) -> None:
    from vla.robot.objects import poses_from_states

    inner = TASKS.make("pick_place", obs_mode="state", cameras=CAMERAS, image_size=24)
    env = EstimatedPosesEnv(inner, estimator, "pick_place")
    est = PoseEstimator.load(estimator)
    obs, _ = env.reset(seed=3)
    truth = inner.unwrapped._obs()["state"]
    errors = []
    for _ in range(2):
        poses = est.estimate(obs["images"], obs["state"][:9])
        true = poses_from_states("pick_place", truth[None])[0]
        errors.append(1000 * np.linalg.norm(poses[:, :3] - true[:, :3], axis=1))
        want = inner.unwrapped.features_from_poses(poses, obs["state"][:3])
        np.testing.assert_allclose(obs["state"][9:], want, atol=1e-6)
        np.testing.assert_allclose(obs["state"][:9], truth[:9])  # the arm's own state is the task's
        assert not np.allclose(obs["state"][9:], truth[9:], atol=1e-3)  # two training steps know nothing
        obs, *_ = env.step(np.zeros(7, np.float32))
        truth = inner.unwrapped._obs()["state"]
    errors.append(env.errors[-1])  # the step's reading is kept before the policy sees it
    want = np.median(np.stack(errors), axis=0)
    assert env.episode_errors_mm() == pytest.approx({"cube": want[0], "zone": want[1]}, abs=0.01)
    env.reset(seed=4)
    assert len(env.errors) == 1  # a new episode's errors start again
    env.close()


def test_pose_errors_are_summarised_per_object_over_successes_and_failures() -> None:
    rows = [(True, {"cube": 2.0, "zone": 1.0}), (True, {"cube": 4.0, "zone": 1.0}),
            (False, {"cube": 12.0, "zone": 3.0}), (False, {})]  # no estimate (no poses run): counts for nothing
    out = pose_error_summary(rows)
    assert out["cube"]["median"] == 4.0 and out["cube"]["success_median"] == 3.0
    assert out["cube"]["failure_median"] == 12.0 and out["cube"]["episodes"] == 3
    assert out["zone"]["p90"] == pytest.approx(2.6)
    assert pose_error_summary([(True, {"cube": 1.0})])["cube"]["failure_median"] is None
    assert pose_error_summary([(True, {})]) == {}


def test_an_estimator_the_run_cannot_feed_is_one_clear_error(estimator: str) -> None:
    with pytest.raises(ValueError, match="does not render"):
        EstimatedPosesEnv(TASKS.make("pick_place", obs_mode="state", cameras=("agentview",), image_size=24),
                          estimator, "pick_place")
    with pytest.raises(ValueError, match="does not compute its state from object poses"):
        EstimatedPosesEnv(TASKS.make("stack3", obs_mode="state", cameras=CAMERAS, image_size=24), estimator, "stack3")


def test_pose_kinds_are_taken_out_of_a_perturbation() -> None:
    spec, left = without_pose_kinds("pose_noise:2,action_latency:1,blur:0.5")
    assert spec == "action_latency:1,blur:0.5" and left == ["pose_noise"]
    assert without_pose_kinds("none") == ("none", [])
    assert without_pose_kinds("pose_bias:5") == ("none", ["pose_bias"])


def test_evaluation_with_estimated_poses_says_so_and_leaves_the_pose_kinds_out(estimator: str, tmp_path: Path) -> None:
    common = dict(policy="expert", episodes=1, workers=1, videos=0, horizon=3, cameras=list(CAMERAS), image_size=24,
                  out_dir=str(tmp_path / "e"), poses=estimator)
    summary = run_evaluation(EvalConfig(**common, obs_mode="state", perturb="realistic"), progress=False)
    assert summary["estimated_poses"]["estimator"] == estimator
    assert "pose_noise" in summary["estimated_poses"]["left_out"]
    episode = summary["episodes_detail"][0]["pose_error_mm"]
    assert set(episode) == {"cube", "zone"} and all(v > 0 for v in episode.values())
    assert summary["estimated_poses"]["error_mm"]["cube"]["median"] == episode["cube"]
    with pytest.raises(ValueError, match="feeds a state policy"):
        run_evaluation(EvalConfig(**common, obs_mode="image"), progress=False)


def test_smoothing_averages_the_zones_estimates_over_the_episode_and_restarts_with_it(estimator: str) -> None:
    from vla.perception.smooth import ema_update

    inner = TASKS.make("pick_place", obs_mode="state", cameras=CAMERAS, image_size=24)
    env = EstimatedPosesEnv(inner, estimator, "pick_place", smoothing=0.2)
    est = PoseEstimator.load(estimator)
    for seed in (1, 2):
        obs, _ = env.reset(seed=seed)
        mean = None
        for _ in range(3):
            raw = est.estimate(obs["images"], obs["state"][:9])
            mean = ema_update(mean, raw[1, :3], 0.2)
            np.testing.assert_allclose(obs["state"][-3:], mean, atol=1e-6)  # the zone's features
            np.testing.assert_allclose(obs["state"][9:12], raw[0, :3], atol=1e-6)  # the cube's: as read
            obs, *_ = env.step(np.zeros(7, np.float32))
    with pytest.raises(ValueError, match="poses_smoothing"):
        EvalConfig(poses_smoothing=0).validate()
    with pytest.raises(ValueError, match="poses_rest_gate_mm"):
        EvalConfig(poses_rest_gate_mm=-1).validate()
    env.close()


def test_a_rest_gate_averages_the_cube_while_its_estimates_stay_close(estimator: str) -> None:
    from vla.perception.smooth import gated_update

    inner = TASKS.make("pick_place", obs_mode="state", cameras=CAMERAS, image_size=24)
    env = EstimatedPosesEnv(inner, estimator, "pick_place", smoothing=0.2, rest_gate_mm=1000.0)
    est = PoseEstimator.load(estimator)
    obs, _ = env.reset(seed=3)
    mean = None
    for _ in range(3):
        raw = est.estimate(obs["images"], obs["state"][:9])
        mean = gated_update(mean, raw[0, :3], 0.2, 1.0)
        np.testing.assert_allclose(obs["state"][9:12], mean, atol=1e-6)  # the cube's features: averaged
        obs, *_ = env.step(np.zeros(7, np.float32))
    env.close()
