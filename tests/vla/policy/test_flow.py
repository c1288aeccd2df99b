import numpy as np
import pytest
import torch

from vla.policy import flow


def test_sample_tau_follows_shifted_beta() -> None:
    tau = flow.sample_tau(200_000, 1.5, 0.999, torch.Generator().manual_seed(0))
    assert float(tau.min()) >= 0.0 and float(tau.max()) <= 0.999
    # 1 - Beta(1.5, 1) has mean 1 - 1.5 / 2.5 = 0.4: noisy times are favoured.
    assert abs(float(tau.mean()) - 0.999 * 0.4) < 0.005


def test_prefix_lengths_and_mask() -> None:
    g = torch.Generator().manual_seed(0)
    d = flow.sample_prefix_len(10_000, 5, 0.5, g)
    assert int(d.min()) == 0 and int(d.max()) == 5
    assert abs(float((d == 0).float().mean()) - 0.5) < 0.03
    assert int(flow.sample_prefix_len(100, 0, 1.0, g).abs().sum()) == 0
    mask = flow.prefix_mask(torch.tensor([0, 2, 4]), 4)
    assert mask.tolist() == [[False] * 4, [True, True, False, False], [True] * 4]


def test_interpolation_endpoints_and_velocity() -> None:
    x0, x1 = torch.randn(2, 4, 3), torch.randn(2, 4, 3)
    tau = torch.tensor([[0.0, 1.0, 0.5, 0.25]] * 2)
    xt = flow.interpolate(x0, x1, tau)
    assert torch.allclose(xt[:, 0], x0[:, 0]) and torch.allclose(xt[:, 1], x1[:, 1])
    assert torch.allclose(xt[:, 2], (x0[:, 2] + x1[:, 2]) / 2)
    # The exact velocity maps any x_tau back to x1.
    v = flow.target_velocity(x0, x1)
    assert torch.allclose(flow.clean_estimate(xt[:, 3], v[:, 3], 0.25), x1[:, 3], atol=1e-6)


def test_euler_with_exact_velocity_reaches_target() -> None:
    x0, x1 = np.random.default_rng(0).standard_normal((2, 5))
    x = x0.copy()
    for _ in flow.euler_times(10):
        x = x + 0.1 * (x1 - x0)
    np.testing.assert_allclose(x, x1, atol=1e-12)
    with pytest.raises(ValueError, match="num_steps"):
        flow.euler_times(0)


def test_guidance_weight_is_rtc_weight_clipped() -> None:
    assert flow.guidance_weight(0.5, 10.0) == pytest.approx(2.0)  # (1-t)/(t r^2) = 2 at t = 0.5
    assert flow.guidance_weight(0.0, 5.0) == 5.0 and flow.guidance_weight(0.99, 5.0) == 5.0
    assert flow.guidance_weight(0.3, 100.0) == pytest.approx((0.09 + 0.49) / 0.21)


def test_masked_mse_ignores_zero_weight_positions() -> None:
    pred, target = torch.zeros(1, 3, 2), torch.zeros(1, 3, 2)
    target[0, 2] = 100.0
    w = torch.tensor([[1.0, 1.0, 0.0]])
    assert float(flow.masked_mse(pred, target, w)) == 0.0
    target[0, 0] = 2.0
    assert float(flow.masked_mse(pred, target, w)) == pytest.approx(2.0)  # 4 averaged over 2 positions


def test_clip_targets_bounds_outliers_and_leaves_the_rest() -> None:
    x = torch.tensor([[0.5, -3.0, 49.0, 2.0]])
    clipped, mask = flow.clip_targets(x, 2.0)
    assert clipped.tolist() == [[0.5, -2.0, 2.0, 2.0]]
    assert mask.tolist() == [[False, True, True, False]]
    same, none = flow.clip_targets(x, 0.0)  # off
    assert torch.equal(same, x) and not none.any()
