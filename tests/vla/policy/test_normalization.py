"""vla/policy/normalization.py: a feature constant in the statistics cannot blow up its inputs (the state
floor), and normalised state inputs are clipped."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vla.data.stats import RunningStats, Stats
from vla.policy.config import PolicyConfig
from vla.policy.normalization import EPS, PolicyNormalizer, center_scale


def stats_with_a_constant_feature() -> Stats:
    rng = np.random.default_rng(0)
    rows = np.stack([rng.normal(0.3, 0.1, 400), np.full(400, 0.82), rng.normal(0, 0.05, 400)], 1)
    acc = RunningStats(3)
    acc.update(rows)
    return acc.finish()


def normaliser(**cfg: object) -> PolicyNormalizer:
    stats = stats_with_a_constant_feature()
    action = RunningStats(2)
    action.update(np.random.default_rng(1).normal(0, 1, (100, 2)))
    n = PolicyNormalizer(PolicyConfig(state_dim=3, action_dim=2, cameras=[], **cfg))
    n.set_stats({"state": stats, "action": action.finish()})
    return n


def test_a_millimetre_on_a_constant_feature_stays_a_fraction_of_a_unit() -> None:
    n = normaliser()
    x = torch.tensor([[0.3, 0.82 + 0.001, 0.0]])
    out = n.state(x)
    assert abs(float(out[0, 1])) == pytest.approx(0.1, rel=1e-3)  # 1 mm over the 1 cm floor
    # the same millimetre over the old epsilon was a thousand standard deviations
    _, scale = center_scale(stats_with_a_constant_feature(), "mean_std", EPS)
    assert 0.001 / scale[1] > 999


def test_the_floor_leaves_varying_features_alone_and_is_configurable() -> None:
    stats = stats_with_a_constant_feature()
    n = normaliser(state_floor=0.05)
    assert float(n.state_scale[1]) == pytest.approx(0.05) and float(n.state_scale[0]) == pytest.approx(stats.std[0])
    assert float(n.state_scale[2]) == pytest.approx(max(stats.std[2], 0.05))


def test_normalised_state_inputs_are_clipped() -> None:
    n = normaliser(state_clip=5.0)
    out = n.state(torch.tensor([[1e6, -1e6, 0.0]]))
    assert float(out.max()) == 5.0 and float(out.min()) == -5.0


def test_bad_floor_or_clip_values_are_one_line_errors() -> None:
    with pytest.raises(ValueError, match="state_floor must be in"):
        PolicyConfig(state_dim=3, action_dim=2, state_floor=0.0)
    with pytest.raises(ValueError, match="state_clip must be finite"):
        PolicyConfig(state_dim=3, action_dim=2, state_clip=float("inf"))

