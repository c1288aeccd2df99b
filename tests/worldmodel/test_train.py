"""Training on a real store: losses fall, checkpoints load, a resumed run equals an unbroken one."""

import json
from pathlib import Path

import pytest
import torch

from tests.worldmodel.helpers import tiny_job
from vla.policy.checkpoint import CheckpointError
from worldmodel.checkpoint import latest_wm_checkpoint, load_checkpoint
from worldmodel.train import train_world_model

pytestmark = pytest.mark.slow


def test_training_writes_checkpoints_tensorboard_and_a_summary(trained_wm: Path) -> None:
    ck = latest_wm_checkpoint(trained_wm)
    assert ck is not None and ck.name == "step_00000006"
    assert (ck / "model.safetensors").is_file() and (ck / "optimizer.safetensors").is_file()
    assert list((trained_wm / "tb").glob("events.out.tfevents.*"))
    summary = json.loads((trained_wm / "train_summary.json").read_text())
    assert summary["steps"] == 6 and set(summary["val"]) >= {"consistency", "success", "value", "state"}
    model, job, meta, _, _ = load_checkpoint(trained_wm)
    assert meta["task"] == "pick_place" and meta["episodes"] == 7 and job.model.state_dim == 22
    assert not model.training


def test_loss_falls_with_training(pick_place_store: Path, tmp_path: Path) -> None:
    first = train_world_model([str(pick_place_store)], tmp_path / "a",
                              tiny_job("train.steps=1", "train.val_fraction=0"))
    more = train_world_model([str(pick_place_store)], tmp_path / "b", tiny_job("train.steps=60", "train.val_fraction=0",
                                                                               "train.log_every=60"))
    assert more["last"]["loss"] < 0.7 * first["last"]["loss"]


def test_resume_is_exact(pick_place_store: Path, tmp_path: Path) -> None:
    train_world_model([str(pick_place_store)], tmp_path / "whole", tiny_job("train.steps=4"))
    train_world_model([str(pick_place_store)], tmp_path / "split", tiny_job("train.steps=2"))
    train_world_model([str(pick_place_store)], tmp_path / "split", tiny_job("train.steps=4"), resume=True)
    a = load_checkpoint(tmp_path / "whole")[0].state_dict()
    b = load_checkpoint(tmp_path / "split")[0].state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_corrupt_or_foreign_checkpoints_are_named(trained_wm: Path, tmp_path: Path) -> None:
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(latest_wm_checkpoint(trained_wm), bad)
    (bad / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(CheckpointError, match=r"model\.safetensors"):
        load_checkpoint(bad)
    (bad / "config.json").write_text(json.dumps({"format": "vla-policy"}))
    with pytest.raises(CheckpointError, match=r"not a world-model checkpoint"):
        load_checkpoint(bad)
    with pytest.raises(CheckpointError, match="neither a world-model checkpoint"):
        load_checkpoint(tmp_path)
