"""vla.train.ema: the decay's warm-up, and averaging from the first update without it."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from vla.train.ema import EMA


def _model(value: float) -> nn.Module:
    m = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        m.weight.fill_(value)
    return m


def _run(warmup: bool, decay: float, updates: int) -> float:
    """Start at weight 1, then the trained weight jumps to 0 and stays: what is left of the start."""
    m = _model(1.0)
    ema = EMA(m, decay, warmup=warmup)
    with torch.no_grad():
        m.weight.fill_(0.0)
    for _ in range(updates):
        ema.update(m)
    return float(ema.state["weight"])


def test_warmup_forgets_the_start_within_a_few_updates() -> None:
    # d_n = (1 + n) / (10 + n) for n = 1..10: the product is below 0.1
    assert _run(True, 0.999, 10) < 0.1


def test_without_warmup_the_start_decays_at_the_full_rate() -> None:
    for n in (1, 10, 500):
        assert _run(False, 0.999, n) == pytest.approx(0.999 ** n, rel=1e-5)


def test_warmup_reaches_the_full_decay_after_enough_updates() -> None:
    m = _model(0.0)
    ema = EMA(m, 0.9)
    for _ in range(200):
        ema.update(m)
    with torch.no_grad():
        m.weight.fill_(1.0)
    ema.update(m)  # n = 201: (1 + n) / (10 + n) > 0.9, so the decay is 0.9
    assert float(ema.state["weight"]) == pytest.approx(0.1, rel=1e-5)


def test_trainer_without_warmup_keeps_the_initial_weights_in_its_average(tmp_path) -> None:
    """A fine-tune from an EMA checkpoint (ema_warmup=False): after n steps the average still holds
    decay**n of the initial weights, so it differs from the warm-up's average of the new iterates."""
    from tests.vla.train.test_trainer import cfg, new_trainer

    start = {k: v.clone() for k, v in new_trainer(tmp_path / "x", cfg()).model.state_dict().items()}
    runs = {}
    for warm in (True, False):
        t = new_trainer(tmp_path / str(warm), cfg(steps=3, ema_decay=0.9, ema_warmup=warm))
        assert t.ema is not None and t.ema.warmup is warm
        t.fit()
        runs[warm] = (t.ema.state, t.model.state_dict())
    ema, raw = runs[False]
    key = next(k for k in start if k.endswith("weight") and start[k].is_floating_point()
               and not torch.equal(start[k], raw[k]))
    # the warm-up's average has all but forgotten the start; the full-decay one still leans on it
    gap_start = (ema[key] - start[key]).abs().mean()
    gap_warm = (runs[True][0][key] - start[key]).abs().mean()
    assert gap_start < gap_warm


def test_parameters_are_averaged_and_buffers_copied() -> None:
    m = nn.BatchNorm1d(2)  # float parameters, float running stats, an integer batch counter
    ema = EMA(m, 0.5, warmup=False)
    with torch.no_grad():
        m.weight.fill_(3.0)
        m.running_mean.fill_(7.0)
        m.num_batches_tracked.fill_(4)
    ema.update(m)
    assert torch.equal(ema.state["weight"], torch.full((2,), 2.0))  # 0.5 * 1 + 0.5 * 3
    assert torch.equal(ema.state["running_mean"], torch.full((2,), 7.0))
    assert int(ema.state["num_batches_tracked"]) == 4
