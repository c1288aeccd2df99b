"""HABC critics on a toy problem with a known answer: 1-D positions, success iff x > 0."""

import pytest
import torch

from vla.refine.critics import CriticConfig, habc_weights, train_critics


def toy(n: int = 2000) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n, 1, generator=g) * 2 - 1
    viability = (x[:, 0] > 0).float()
    efficiency = torch.where(x[:, 0] > 0, 0.98 ** ((1 - x[:, 0]) * 20), torch.zeros(n))
    return {"features": x, "viability": viability, "viability_mask": torch.ones(n, dtype=torch.bool),
            "efficiency": efficiency, "efficiency_mask": x[:, 0] > 0}


def test_critics_learn_viability_and_weights_favour_progress() -> None:
    d = toy()
    cfg = CriticConfig(steps=400, hidden=32)
    critic, losses = train_critics(d["features"], d["viability"], d["viability_mask"], d["efficiency"],
                                   d["efficiency_mask"], cfg)
    assert losses["viability_loss"] < 0.3
    # Transitions: from x to x + 0.2 (towards success) vs x to x - 0.2 (away), around x = 0.
    x = torch.tensor([[-0.1], [0.1], [0.1], [-0.1]])
    next_index = torch.tensor([1, 0, 3, 2])  # rows 0->1 improves, 1->0 worsens
    out = habc_weights(critic, x, next_index, torch.zeros(4, dtype=torch.bool),
                       torch.tensor([False, False, False, True]), cfg)
    assert out["weight"][0] > 1.0 > out["weight"][1]
    assert out["weight"][3] == cfg.demo_weight  # intervention step: demonstration weight
    assert out["viability"][1] > 0.5 > out["viability"][0]


def test_ablations_and_bad_input() -> None:
    d = toy(200)
    for kwargs in ({"use_gate": False}, {"single_critic": True}):
        cfg = CriticConfig(steps=20, hidden=8, **kwargs)
        critic, _ = train_critics(d["features"], d["viability"], d["viability_mask"], d["efficiency"],
                                  d["efficiency_mask"], cfg)
        out = habc_weights(critic, d["features"], torch.arange(200), torch.zeros(200, dtype=torch.bool),
                           torch.zeros(200, dtype=torch.bool), cfg)
        expected_gate = 0.0 if kwargs.get("single_critic") else 0.5
        assert torch.all(out["gate"] == expected_gate)
        assert torch.isfinite(out["weight"]).all()
    with pytest.raises(ValueError, match="features must be"):
        train_critics(d["features"][:5], d["viability"], d["viability_mask"], d["efficiency"], d["efficiency_mask"],
                      CriticConfig(steps=1))
    with pytest.raises(ValueError, match="no labelled steps"):
        none = torch.zeros(200, dtype=torch.bool)
        train_critics(d["features"], d["viability"], none, d["efficiency"], none, CriticConfig(steps=1))
