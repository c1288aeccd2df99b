"""Shared fixtures: small configs, and one policy trained on LineDataset (once per session)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch

from tests.vla.policy.synthetic_data import LineDataset
from vla.policy.config import PolicyConfig, load_policy_config
from vla.policy.model import VLAModel
from vla.train.config import TrainConfig
from vla.train.trainer import Trainer


@pytest.fixture(autouse=True)
def one_torch_thread() -> object:
    """CI machines are small and shared: extra intra-op threads only add contention at these sizes."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def small_config(cameras: tuple[str, ...] = (), **kw: object) -> PolicyConfig:
    base = dict(cameras=list(cameras), state_dim=3, action_dim=2, d_model=32, n_heads=2, trunk_layers=1,
                expert_layers=1, image_size=(16, 16), vision_channels=(8, 16))
    base.update(kw)
    return load_policy_config("tiny", **base)


def reseal(ckpt: Path) -> None:
    """Make config.json's manifest match the folder's files again after a test edited one, as a checkpoint
    written with those contents would have it (its sizes and sha256s, and its own digest)."""
    meta = json.loads((ckpt / "config.json").read_text())
    meta["files"] = {f.name: {"bytes": f.stat().st_size, "sha256": hashlib.sha256(f.read_bytes()).hexdigest()}
                     for f in sorted(ckpt.iterdir()) if f.name != "config.json"}
    body = {k: v for k, v in meta.items() if k != "sha256"}
    meta["sha256"] = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    (ckpt / "config.json").write_text(json.dumps(meta, indent=2))


@pytest.fixture(scope="session")
def trained_line_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[VLAModel, LineDataset]:
    """A state-only model trained 300 steps on the bimodal LineDataset with prefix conditioning."""
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # session fixture: set up before the autouse one runs
    data = LineDataset(n=512, seed=0)
    cfg = load_policy_config("tiny", state_dim=3, action_dim=2, d_model=64, n_heads=4, max_prefix=6,
                             prefix_prob=0.7)
    model = VLAModel(cfg)
    train_cfg = TrainConfig(steps=300, batch_size=64, lr=2e-3, warmup_steps=20, ema_decay=0.0,
                            tensorboard=False, progress=False, ckpt_every=10_000, device="cpu")
    try:
        Trainer(model, data, train_cfg, tmp_path_factory.mktemp("line"), data.stats()).fit()
    finally:
        torch.set_num_threads(threads)
    return model.eval(), data
