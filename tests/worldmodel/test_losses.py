import numpy as np
import pytest
import torch

from worldmodel.losses import (
    bce_loss,
    consistency_loss,
    disagreement,
    horizon_weights,
    simnorm,
    state_loss,
    value_targets,
)


def test_horizon_weights_decay_and_sum_to_one() -> None:
    w = horizon_weights(3, 0.5)
    assert torch.allclose(w, torch.tensor([4.0, 2.0, 1.0]) / 7)
    assert torch.allclose(horizon_weights(4, 1.0), torch.full((4,), 0.25))
    with pytest.raises(ValueError, match="rho"):
        horizon_weights(3, 0.0)


def test_consistency_loss_is_zero_on_target_and_ignores_masked_steps() -> None:
    target = torch.rand(4, 3, 8)
    pred = target.unsqueeze(0).repeat(2, 1, 1, 1)
    valid = torch.ones(4, 3, dtype=torch.bool)
    assert consistency_loss(pred, target, valid, 0.7) == 0
    pred[:, :, 2] += 100.0  # garbage only where the episode has ended
    valid[:, 2] = False
    assert consistency_loss(pred, target, valid, 0.7) == 0
    valid[0, 2] = True
    assert consistency_loss(pred, target, valid, 0.7) > 1.0


def test_consistency_loss_weights_early_steps_more() -> None:
    target = torch.zeros(2, 2, 4)
    valid = torch.ones(2, 2, dtype=torch.bool)
    early, late = torch.zeros(1, 2, 2, 4), torch.zeros(1, 2, 2, 4)
    early[:, :, 0] = 1.0
    late[:, :, 1] = 1.0
    assert consistency_loss(early, target, valid, 0.5) > consistency_loss(late, target, valid, 0.5)


def test_bce_and_state_losses_accept_members_or_none() -> None:
    target = torch.tensor([[1.0, 0.0]])
    valid = torch.ones(1, 2, dtype=torch.bool)
    good = torch.tensor([[10.0, -10.0]])
    bad = -good
    assert bce_loss(good, target, valid, 1.0) < 1e-3 < bce_loss(bad, target, valid, 1.0)
    assert bce_loss(good.unsqueeze(0).repeat(3, 1, 1), target, valid, 1.0) < 1e-3
    s = torch.rand(1, 2, 5)
    assert state_loss(s, s, valid, 1.0) == 0 and state_loss(s.unsqueeze(0) + 1, s, valid, 1.0) == pytest.approx(1.0)


def test_disagreement_is_zero_when_members_agree_and_grows_with_spread() -> None:
    z = torch.rand(1, 6, 16).repeat(5, 1, 1)
    assert torch.all(disagreement(z) == 0)
    spread = z + torch.linspace(-1, 1, 5)[:, None, None]
    small = z + 0.1 * torch.linspace(-1, 1, 5)[:, None, None]
    assert torch.all(disagreement(spread) > disagreement(small))
    assert disagreement(spread).shape == (6,)
    assert torch.all(disagreement(z[:1]) == 0)  # a single member has no disagreement


def test_value_targets_discount_to_the_successful_end() -> None:
    steps = np.array([[0, 1, 2, 3]])  # the last window step lies past a 3-step episode's end
    v = value_targets(steps, np.array([[3]]), np.array([[True]]), 0.5)
    np.testing.assert_array_equal(v, [[0.25, 0.5, 1.0, 1.0]])
    assert np.all(value_targets(steps, np.array([[4]]), np.array([[False]]), 0.9) == 0)
    with pytest.raises(ValueError, match="gamma"):
        value_targets(steps, np.array([[3]]), np.array([[True]]), 0.0)


def test_simnorm_is_a_softmax_per_group() -> None:
    x = torch.randn(3, 16) * 10
    y = simnorm(x, 8)
    assert torch.allclose(y.reshape(3, 2, 8).sum(-1), torch.ones(3, 2))
    assert torch.all(y >= 0)
    with pytest.raises(ValueError, match="multiple"):
        simnorm(torch.zeros(2, 10), 8)


def test_pairwise_rank_loss_rewards_the_true_order_within_a_state_and_ignores_ties() -> None:
    from worldmodel.losses import pairwise_rank_loss

    labels = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])  # the second state orders nothing
    right = torch.tensor([[3.0, -3.0, -3.0], [0.0, 5.0, -5.0]])
    wrong = torch.tensor([[-3.0, 3.0, 3.0], [0.0, 5.0, -5.0]])
    assert pairwise_rank_loss(right, labels) < 0.01 < 3.0 < pairwise_rank_loss(wrong, labels)
    # two ordered pairs, each softplus(-(s_i - s_j)): equal scores give log 2
    assert torch.isclose(pairwise_rank_loss(torch.zeros(2, 3), labels), torch.log(torch.tensor(2.0)))
    # ensemble members share the labels: the mean over members
    both = pairwise_rank_loss(torch.stack([right, wrong]), labels)
    assert torch.isclose(both, (pairwise_rank_loss(right, labels) + pairwise_rank_loss(wrong, labels)) / 2)
    # nothing ordered: 0, with a gradient path
    flat = torch.zeros(2, 3, requires_grad=True)
    loss = pairwise_rank_loss(flat, torch.ones(2, 3))
    loss.backward()
    assert loss.item() == 0.0 and flat.grad is not None
