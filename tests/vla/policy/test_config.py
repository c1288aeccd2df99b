import pytest

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
])
def test_bad_values_are_named(changes: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        load_policy_config("tiny", **changes)


def test_unknown_key_and_preset() -> None:
    with pytest.raises(ValueError, match=r"unknown key 'chunk_sise'.*chunk_size"):
        load_policy_config("tiny", chunk_sise=8)
    with pytest.raises(FileNotFoundError, match=r"unknown policy preset 'huge'.*tiny"):
        load_policy_config("huge")
