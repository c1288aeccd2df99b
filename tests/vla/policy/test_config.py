import json
import math
import time
from pathlib import Path

import pytest

from tests.vla.policy.conftest import reseal
from vla.policy.checkpoint import CheckpointError, load_config, save_checkpoint
from vla.policy.config import PolicyConfig, load_policy_config
from vla.policy.model import VLAModel, count_parameters


def test_presets_load_and_tiny_is_under_5m_params() -> None:
    tiny = load_policy_config("tiny", cameras=["agentview", "robot0_eye_in_hand"], state_dim=9, action_dim=7)
    assert tiny.chunk_size == 16 and tiny.num_steps == 10
    assert count_parameters(VLAModel(tiny)) < 5_000_000
    small = load_policy_config("small")
    large = load_policy_config("large")
    assert small.d_model > tiny.d_model and large.d_model > small.d_model


def test_json_round_trip() -> None:
    cfg = load_policy_config("tiny", cameras=["a"])
    assert PolicyConfig.from_dict(cfg.to_dict()) == cfg


@pytest.mark.parametrize(("changes", "match"), [
    ({"n_heads": 3}, "divisible"),
    ({"max_prefix": 16}, "max_prefix"),
    ({"vision_backbone": "resnet"}, "vision_backbone 'resnet' unknown"),
    ({"vision_backbone": "hf"}, "needs vision_weights"),
    ({"cameras": ["a", "a"]}, "duplicate camera"),
    ({"vision_tokens": 3}, "square"),
    ({"chunk_size": 0}, "chunk_size"),
    # a non-finite float is named whether or not the key has a range of its own (issue: a NaN passed)
    ({"mlp_ratio": math.nan}, "mlp_ratio must be finite, got nan"),
    ({"tau_max": math.inf}, "tau_max must be finite, got inf"),
    ({"tau_beta_alpha": math.nan}, "tau_beta_alpha must be finite, got nan"),
])
def test_bad_values_are_named(changes: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        load_policy_config("tiny", **changes)


def test_unknown_key_and_preset() -> None:
    with pytest.raises(ValueError, match=r"unknown key 'chunk_sise'.*chunk_size"):
        load_policy_config("tiny", chunk_sise=8)
    with pytest.raises(FileNotFoundError, match=r"unknown policy preset 'huge'.*tiny"):
        load_policy_config("huge")


@pytest.mark.parametrize(("key", "value", "bound"), [
    ("chunk_size", 10**9, 1024), ("n_obs_steps", 10_000, 64), ("d_model", 10**6, 8192), ("n_heads", 4096, 256),
    ("trunk_layers", 10_000, 256), ("expert_layers", 10_000, 256), ("state_dim", 10**6, 4096),
    ("action_dim", 10**6, 1024), ("num_steps", 10**6, 1000), ("vision_tokens", 4096, 1024),
])
def test_sizes_have_upper_bounds_named_with_key_value_and_bound(key: str, value: int, bound: int) -> None:
    with pytest.raises(ValueError, match=rf"{key} must be an integer in \[1, {bound}\], got {value}"):
        load_policy_config("tiny", **{key: value})


def test_a_checkpoint_asking_for_a_huge_chunk_is_refused_before_anything_is_allocated(tmp_path: Path) -> None:
    """chunk_size 1e9 in a checkpoint's config.json tried to allocate 512 GB; now one line names the file,
    the key, the value and the bound. Every preset stays well inside the bounds."""
    for preset in ("tiny", "small", "large"):
        load_policy_config(preset, cameras=["a", "b"], state_dim=39, action_dim=7)
    with pytest.raises(ValueError, match=r"image_size must be two sides in \[1, 2048\].*got \[100000, 64\]"):
        load_policy_config("tiny", image_size=[100_000, 64])
    ckpt = save_checkpoint(tmp_path / "ckpt", VLAModel(load_policy_config("tiny", state_dim=3, action_dim=2)))
    meta = json.loads((ckpt / "config.json").read_text())
    meta["policy"]["chunk_size"] = 1e9
    (ckpt / "config.json").write_text(json.dumps(meta))
    reseal(ckpt)
    t0 = time.perf_counter()
    with pytest.raises(CheckpointError, match=r"config\.json: invalid policy config .*chunk_size must be an integer in "
                                              r"\[1, 1024\], got 1000000000\.0"):
        load_config(ckpt)
    assert time.perf_counter() - t0 < 1.0
