"""Fixtures shared across the test folders."""

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def tiny_ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny VLA for pick_place (agentview + proprio -> 7-dim EE deltas), fresh weights."""
    import torch

    from vla.policy.checkpoint import save_checkpoint
    from vla.policy.config import load_policy_config
    from vla.policy.model import VLAModel

    torch.manual_seed(0)
    cfg = load_policy_config("tiny", cameras=["agentview"], state_dim=9, action_dim=7, d_model=32, n_heads=2,
                             trunk_layers=1, expert_layers=1, image_size=(32, 32), vision_channels=(8, 16),
                             chunk_size=8, max_prefix=4, num_steps=2)
    return save_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny", VLAModel(cfg))
