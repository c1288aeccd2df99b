"""Co-training on labelled frames (`train.perception_frames`): the file's checks, the head's loss in
the training step, and `vla train` sizing the head from the file."""

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.vla.train.test_pretrain import quaternion_store
from vla.train.perception import PerceptionFrames, frames_dim

SMALL = ["policy.d_model=32", "policy.n_heads=2", "policy.trunk_layers=1", "policy.expert_layers=1",
         "policy.vision_channels=[8,16]"]


def frames_file(path: Path, n: int = 20, k: int = 3, cameras: tuple[str, ...] = ("agentview",)) -> Path:
    rng = np.random.default_rng(0)
    np.savez(path, targets=rng.normal(size=(n, k)).astype(np.float32),
             **{f"images/{c}": rng.integers(0, 256, (n, 16, 16, 3), dtype=np.uint8) for c in cameras})
    return path


def test_frames_are_checked_with_the_file_and_key_named(tmp_path: Path) -> None:
    good = frames_file(tmp_path / "f.npz")
    frames = PerceptionFrames(good, ["agentview"])
    assert len(frames) == 20 and frames.dim == 3 == frames_dim(good)
    images, targets = frames.batch(np.random.default_rng(0), 5)
    assert images["agentview"].shape == (5, 16, 16, 3) and targets.shape == (5, 3)
    with pytest.raises(KeyError, match="no frames of camera 'wrist'"):
        PerceptionFrames(good, ["agentview", "wrist"])
    with pytest.raises(FileNotFoundError, match="perception_frames file not found"):
        PerceptionFrames(tmp_path / "none.npz", ["agentview"])
    np.savez(tmp_path / "obj.npz", targets=np.array([{"a": 1}], dtype=object))  # would need pickle to read
    with pytest.raises(ValueError, match="without pickled objects"):
        PerceptionFrames(tmp_path / "obj.npz", [])
    np.savez(tmp_path / "bad.npz", targets=np.zeros((4, 2), np.float32),
             **{"images/agentview": np.zeros((4, 16, 16, 3))})
    with pytest.raises(ValueError, match=r"'images/agentview' must be uint8 \[4, H, W, 3\], got float64"):
        PerceptionFrames(tmp_path / "bad.npz", ["agentview"])
    np.savez(tmp_path / "nan.npz", targets=np.full((4, 2), np.nan, np.float32))
    with pytest.raises(ValueError, match="'targets' must be finite"):
        PerceptionFrames(tmp_path / "nan.npz", [])


def test_training_adds_the_perception_loss_and_sizes_the_head_from_the_file(tmp_path: Path) -> None:
    from vla.policy.checkpoint import load_config
    from vla.train.pretrain import build, run_training

    store = quaternion_store(tmp_path / "s.zarr", cameras=("agentview",))
    frames = frames_file(tmp_path / "f.npz", k=4)
    policy, train_cfg, *_ = build(store.path, "tiny", "debug", [*SMALL, f"train.perception_frames={frames}"])
    assert policy.perception_dim == 4 and train_cfg.perception_weight == 1.0
    result = run_training(store.path, tmp_path / "run", "tiny", "debug",
                          [*SMALL, f"train.perception_frames={frames}", "train.perception_weight=0.5",
                           "train.steps=2", "train.ckpt_every=2", "train.log_every=1"])
    assert load_config(result.last_checkpoint).perception_dim == 4
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tb = EventAccumulator(str(tmp_path / "run" / "tb"))
    tb.Reload()
    last = {k: tb.Scalars(f"train/{k}")[-1].value for k in ("loss", "flow_loss", "perception_loss")}
    assert last["perception_loss"] > 0
    assert last["loss"] == pytest.approx(last["flow_loss"] + 0.5 * last["perception_loss"], rel=1e-4)
    wrong = frames_file(tmp_path / "w.npz", k=4, cameras=("wrist",))
    with pytest.raises(KeyError, match="no frames of camera 'agentview'"):
        run_training(store.path, tmp_path / "run2", "tiny", "debug", [*SMALL, f"train.perception_frames={wrong}",
                                                                     "train.steps=1"])


def test_perception_loss_trains_the_camera_encoder_only() -> None:
    from tests.vla.policy.conftest import small_config
    from vla.policy.model import VLAModel

    model = VLAModel(small_config(("agentview",), perception_dim=3))
    images = {"agentview": torch.randint(0, 256, (6, 16, 16, 3), dtype=torch.uint8)}
    loss = model.perception_loss(images, torch.randn(6, 3))
    loss.backward()
    assert model.vision["agentview"].proj.weight.grad.abs().sum() > 0 and model.perception_head.weight.grad is not None
    assert all(p.grad is None for n, p in model.named_parameters() if n.startswith(("trunk", "expert", "proprio")))
    with pytest.raises(ValueError, match=r"perception targets have shape \(6, 2\), expected \(N, 3\)"):
        model.perception_loss(images, torch.randn(6, 2))
    with pytest.raises(ValueError, match="needs a policy with cameras and perception_dim > 0"):
        VLAModel(small_config(("agentview",))).perception_loss(images, torch.randn(6, 3))
