"""vla/policy/mean.py: the mean of several trainings' chunks, loaded through its spec."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from vla.policy.checkpoint import save_checkpoint
from vla.policy.config import load_policy_config
from vla.policy.mean import MeanPolicy, parse_members
from vla.policy.model import VLAModel
from vla.policy.specs import load_spec, policy_label


def tiny(path: Path, seed: int, **over: object) -> Path:
    torch.manual_seed(seed)
    cfg = load_policy_config("tiny", **{**dict(cameras=["agentview"], state_dim=9, action_dim=7, d_model=32,
                                               n_heads=2, trunk_layers=1, expert_layers=1, image_size=(32, 32),
                                               vision_channels=(8, 16), chunk_size=8, max_prefix=4, num_steps=2,
                                               noise_scale=0.0), **over})
    return save_checkpoint(path, VLAModel(cfg))


def obs(rng: np.random.Generator) -> dict[str, object]:
    return {"images": {"agentview": rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)},
            "state": rng.normal(size=9).astype(np.float32), "instruction": "pick the cube"}


def test_the_ensemble_chunk_is_the_mean_of_its_members_chunks(tmp_path: Path) -> None:
    a, b = tiny(tmp_path / "a", 0), tiny(tmp_path / "b", 1)
    ens = load_spec(f"mean:ckpt={a}+{b}", seed=5)
    assert isinstance(ens, MeanPolicy) and ens.cfg.action_dim == 7
    batch = [obs(np.random.default_rng(i)) for i in range(3)]
    ens.reset(7)
    got = ens.sample_chunk(batch)
    pa, pb = load_spec(str(a), seed=5), load_spec(str(b), seed=5)
    pa.reset(7)
    pb.reset(7)
    ca, cb = pa.sample_chunk(batch), pb.sample_chunk(batch)
    assert got.shape == ca.shape == (3, 8, 7)
    assert not np.allclose(ca, cb)  # two trainings: two different chunks, so the mean is not either one
    np.testing.assert_allclose(got, (ca + cb) / 2, atol=1e-5)
    assert policy_label(f"mean:ckpt={a}+{b}") == "mean of 2"


def test_members_that_act_on_other_observations_are_refused_in_one_line(tmp_path: Path) -> None:
    a = tiny(tmp_path / "a", 0)
    other = tiny(tmp_path / "wrist", 1, cameras=["robot0_eye_in_hand"])
    with pytest.raises(ValueError, match=r"mean: .*wrist has cameras=\['robot0_eye_in_hand'\].*has \['agentview'\]"):
        load_spec(f"mean:ckpt={a}+{other}")
    longer = tiny(tmp_path / "long", 2, chunk_size=16, max_prefix=4)
    with pytest.raises(ValueError, match="long has chunk_size=16"):
        load_spec(f"mean:ckpt={a}+{longer}")


def test_bad_mean_specs_are_named() -> None:
    with pytest.raises(ValueError, match="at least 2 policies joined by '\\+'"):
        parse_members("ckpt=only_one")
    with pytest.raises(ValueError, match="at least 2 policies"):
        parse_members("ckpt=a+")
    with pytest.raises(ValueError, match="ckpt"):
        parse_members("ckpts=a+b")
    with pytest.raises(ValueError, match="at least 2 members"):
        MeanPolicy([SimpleNamespace(cfg=None)])
