import json
from pathlib import Path

import numpy as np
import pytest

from tests.vla.perception.helpers import pose_store
from vla.config import load_config
from vla.perception.config import PerceptionConfig
from vla.perception.estimator import PoseEnsemble, PoseEstimator, mean_poses, member_spread_mm, write_ensemble
from vla.perception.train import evaluate, train
from vla.policy.checkpoint import CheckpointError


def _quat_z(deg: float) -> np.ndarray:
    h = np.radians(deg) / 2
    return np.array([0.0, 0.0, np.sin(h), np.cos(h)])


def test_mean_poses_averages_positions_and_rotations_on_one_hemisphere() -> None:
    a = np.array([[0.0, 0.0, 0.0, *_quat_z(10)]])
    b = np.array([[0.2, -0.4, 0.6, *-_quat_z(20)]])  # -q is the same rotation: it must not cancel q
    m = mean_poses(np.stack([a, b]))
    np.testing.assert_allclose(m[0, :3], [0.1, -0.2, 0.3])
    np.testing.assert_allclose(m[0, 3:], _quat_z(15), atol=1e-6)
    np.testing.assert_allclose(mean_poses(np.stack([a]))[0], a[0])  # one member: itself


def test_member_spread_is_the_farthest_member_from_the_mean_in_mm() -> None:
    each = np.zeros((3, 2, 1, 7))
    each[1, 0, 0, 0] = 0.003
    each[2, 0, 0, 0] = -0.003  # frame 0: members at -3, 0, +3 mm; frame 1: all agree
    np.testing.assert_allclose(member_spread_mm(each), [[3.0], [0.0]])


def _estimators(tmp_path: Path, seeds: tuple[int, ...], *overrides: str) -> list[str]:
    store = pose_store(tmp_path / "s.zarr", 2)
    names = []
    for s in seeds:
        cfg = load_config(PerceptionConfig, "perception", "debug",
                          [f"out_dir={tmp_path / f'm{s}'}", f"seed={s}", "val_episodes=0", *overrides])
        train(store, cfg, progress=False)
        names.append(f"m{s}")
    return names


def test_an_ensemble_folder_loads_as_one_estimator_and_reads_the_members_mean(tmp_path: Path) -> None:
    names = _estimators(tmp_path, (0, 1))
    write_ensemble(tmp_path / "ens", [f"../{n}" for n in names], {"seeds": [0, 1]})
    ens = PoseEstimator.load(tmp_path / "ens")
    members = [PoseEstimator.load(tmp_path / n) for n in names]
    assert isinstance(ens, PoseEnsemble) and ens.objects == ("cube", "zone") and ens.reads_arm
    rng = np.random.default_rng(0)
    frames = {c: rng.integers(0, 255, (3, 24, 24, 3), dtype=np.uint8) for c in ens.cameras}
    arm = np.tile([0.1, -0.2, 0.3, 0, 0, 0, 1, 0.02, -0.02], (3, 1))
    each = np.stack([m.estimate_batch(frames, arm) for m in members])
    assert np.abs(each[0, :, :, :3] - each[1, :, :, :3]).max() > 1e-4  # two seeds, two estimates
    np.testing.assert_allclose(ens.estimate_batch(frames, arm), mean_poses(each))
    one = ens.estimate({c: f[0] for c, f in frames.items()}, arm[0])
    np.testing.assert_allclose(one, mean_poses(each)[0], atol=1e-6)  # a batch of one: float32 rounding
    with pytest.raises(ValueError, match="reads the arm's state"):  # the members' own checks still hold
        ens.estimate({c: f[0] for c, f in frames.items()})
    report = evaluate(tmp_path / "ens", tmp_path / "s.zarr", progress=False)  # whatever reads an estimator
    assert report["cube"]["position_mm_median"] > 0 and len(report["members"]) == 2
    alone = evaluate(tmp_path / names[0], tmp_path / "s.zarr", progress=False)
    assert report["members"][0]["cube"] == pytest.approx(alone["cube"])
    assert report["spread_mm"]["cube"]["p90"] >= report["spread_mm"]["cube"]["median"] > 0


def test_a_bad_ensemble_is_one_clear_error_and_is_never_written(tmp_path: Path) -> None:
    names = _estimators(tmp_path, (0,))
    _estimators(tmp_path / "plain", (1,), "arm_state=false", "relative=none")
    with pytest.raises(CheckpointError, match="not a pose estimator"):
        write_ensemble(tmp_path / "ens", ["../m0", "../missing"])
    assert not (tmp_path / "ens" / "ensemble.json").exists()
    with pytest.raises(ValueError, match="member 1 reads reads_arm False, member 0 True"):
        write_ensemble(tmp_path / "ens", ["../m0", "../plain/m1"])
    ens = tmp_path / "ens"
    (ens / "ensemble.json").write_text(json.dumps({"format": "pose-estimator ensemble v1", "members": []}))
    with pytest.raises(CheckpointError, match="'members' must be a non-empty list"):
        PoseEstimator.load(ens)
    (ens / "ensemble.json").write_text(json.dumps({"format": "v0", "members": names}))
    with pytest.raises(CheckpointError, match="format 'v0'"):
        PoseEstimator.load(ens)
    (ens / "ensemble.json").write_text("{")
    with pytest.raises(CheckpointError, match="not JSON"):
        PoseEstimator.load(ens)
    with pytest.raises(ValueError, match="holds a pose estimator"):  # an estimator's folder is not overwritten
        write_ensemble(tmp_path / "m0", ["../plain/m1"])
    assert PoseEstimator.load(tmp_path / "m0").__class__ is PoseEstimator
    write_ensemble(tmp_path / "inner", ["../m0"])
    (ens / "ensemble.json").write_text(json.dumps({"format": "pose-estimator ensemble v1", "members": ["../inner"]}))
    with pytest.raises(CheckpointError, match="is itself an ensemble"):
        PoseEstimator.load(ens)


def test_training_with_ensemble_writes_the_members_and_a_folder_that_loads_as_their_mean(tmp_path: Path) -> None:
    store = pose_store(tmp_path / "s.zarr", 4)
    out = tmp_path / "est"
    train(store, load_config(PerceptionConfig, "perception", "debug", [f"out_dir={out}"]), progress=False)
    assert PoseEstimator.load(out).__class__ is PoseEstimator
    cfg = load_config(PerceptionConfig, "perception", "debug", [f"out_dir={out}", "ensemble=2", "seed=3"])
    summary = train(store, cfg, progress=False)
    assert summary["ensemble"] == 2 and len(summary["members_val"]) == 2 and summary["val"]["frames"] > 0
    assert [json.loads((out / f"m{k}" / "summary.json").read_text())["seed"] for k in (0, 1)] == [3, 4]
    assert not (out / "estimator.json").exists()  # the single estimator trained there before is replaced
    ens = PoseEstimator.load(out)
    assert isinstance(ens, PoseEnsemble) and json.loads((out / "ensemble.json").read_text())["seeds"] == [3, 4]
    train(store, load_config(PerceptionConfig, "perception", "debug", [f"out_dir={out}"]), progress=False)
    assert PoseEstimator.load(out).__class__ is PoseEstimator and not (out / "ensemble.json").exists()
    with pytest.raises(ValueError, match="ensemble must be >= 1"):
        load_config(PerceptionConfig, "perception", "debug", ["ensemble=0"]).validate()
