"""HABC pure functions: gate, advantages, weights, losses."""

import numpy as np
import pytest
import torch

from vla.refine import habc_math as hm
from vla.refine.habc_math import (
    bc_weights,
    efficiency_advantage,
    efficiency_loss,
    gate,
    merged_advantage,
    viability_advantage,
    viability_loss,
)


def test_gate_favours_viability_when_uncertain_and_efficiency_when_high() -> None:
    g = gate(torch.tensor([0.0, 0.3, 0.55, 0.8, 1.0]))
    torch.testing.assert_close(g, torch.tensor([0.0, 0.0, 0.5, 1.0, 1.0]))
    with pytest.raises(ValueError, match="v_low"):
        gate(torch.zeros(1), v_low=0.9, v_high=0.5)


def test_efficiency_advantage_is_zero_along_an_exact_on_time_success() -> None:
    gamma = 0.9
    target = gamma ** torch.tensor([3.0, 2.0, 1.0, 0.0])  # E = gamma^steps_to_go along a 4-step success
    torch.testing.assert_close(target, torch.tensor([0.729, 0.81, 0.9, 1.0]))
    e, e_next = target, torch.cat([target[1:], torch.zeros(1)])
    done = torch.tensor([0.0, 0.0, 0.0, 1.0])
    adv = efficiency_advantage(e, e_next, done, gamma)
    torch.testing.assert_close(adv, torch.zeros(4), atol=1e-6, rtol=0)
    # A wasted step (no progress: s' as far from the goal as s) is negative.
    assert efficiency_advantage(torch.tensor([0.81]), torch.tensor([0.81]), torch.zeros(1), gamma) < 0


def test_merged_advantage_follows_the_gate() -> None:
    a_v, a_e = torch.tensor([1.0, -1.0]), torch.tensor([-2.0, 2.0])
    torch.testing.assert_close(merged_advantage(a_v, a_e, torch.zeros(2), normalise=False), a_v)
    torch.testing.assert_close(merged_advantage(a_v, a_e, torch.ones(2), normalise=False), a_e)
    normalised = merged_advantage(a_v, a_e, torch.full((2,), 0.5))
    torch.testing.assert_close(normalised, torch.zeros(2), atol=1e-5, rtol=0)  # equal scales cancel
    assert viability_advantage(torch.tensor(0.2), torch.tensor(0.7)) == pytest.approx(0.5)


def test_weights_clip_and_interventions_are_demonstrations() -> None:
    adv = torch.tensor([0.0, 1.0, 10.0, -5.0])
    w = bc_weights(adv, torch.tensor([False, False, False, True]), beta=1.0, w_max=5.0, demo_weight=2.0)
    torch.testing.assert_close(w, torch.tensor([1.0, float(torch.e), 5.0, 2.0]))
    with pytest.raises(ValueError, match="beta"):
        bc_weights(adv, torch.zeros(4, dtype=torch.bool), beta=0.0)


def test_weights_scale_with_the_viability_of_the_next_state() -> None:
    """Equal advantages: the action that leads where a takeover is expected is not imitated; an
    intervention step keeps its demonstration weight whatever the critic says."""
    adv = torch.zeros(4)
    v_next = torch.tensor([0.9, 0.05, 1.7, 0.0])
    w = bc_weights(adv, torch.tensor([False, False, False, True]), demo_weight=1.0, viability_next=v_next)
    torch.testing.assert_close(w, torch.tensor([0.9, 0.05, 1.0, 1.0]))


def test_losses_are_masked() -> None:
    logits = torch.tensor([10.0, -10.0, 0.0], requires_grad=True)
    loss = viability_loss(logits, torch.tensor([1.0, 0.0, 1.0]), torch.tensor([True, True, False]))
    assert loss.item() < 1e-3  # the unlabelled step (mask False) does not count
    assert viability_loss(logits, torch.zeros(3), torch.zeros(3, dtype=torch.bool)).item() == 0.0
    assert efficiency_loss(torch.tensor([0.5, 9.0]), torch.tensor([0.5, 0.0]), torch.tensor([1, 0])).item() == 0.0


def test_run_ends_and_lambda_targets() -> None:
    # one episode of 6 steps: a policy run 0-2 (taken over at 3), an intervention at 3, a run 4-5
    mask = np.array([True, True, True, False, True, True])
    nxt = np.array([1, 2, 3, 4, 5, 5])
    assert hm.run_ends(mask, nxt).tolist() == [False, False, True, False, False, True]
    terminal = np.array([0, 0, 0, 0, 1, 1], np.float32)  # run 1 ended in a takeover, run 2 in success
    v_next = np.array([0.8, 0.6, 0.5, 0.9, 0.9, 0.0], np.float32)
    # lam = 1: every step of a run carries its run's label (the Monte-Carlo targets)
    assert hm.lambda_targets(terminal, v_next, mask, nxt, 1.0, 1.0).tolist() == [0, 0, 0, 0, 1, 1]
    # lam = 0: one-step bootstrap from the critic's value of the next step
    assert np.allclose(hm.lambda_targets(terminal, v_next, mask, nxt, 1.0, 0.0), [0.8, 0.6, 0, 0, 0.9, 1])
    g = hm.lambda_targets(terminal, v_next, mask, nxt, 1.0, 0.5)
    assert np.isclose(g[1], 0.5 * 0.6 + 0.5 * 0.0) and np.isclose(g[0], 0.5 * 0.8 + 0.5 * g[1])
    # efficiency with gamma: lam = 1 gives gamma ** steps-to-go of the successful run
    eff_mask = np.array([False, False, False, False, True, True])
    assert np.allclose(hm.lambda_targets(terminal, v_next, eff_mask, nxt, 0.9, 1.0), [0, 0, 0, 0, 0.9, 1])
    with pytest.raises(ValueError, match="point forward"):
        hm.lambda_targets(terminal, v_next, mask, np.array([1, 0, 3, 4, 5, 5]), 1.0, 0.5)
    with pytest.raises(ValueError, match="lam in"):
        hm.lambda_targets(terminal, v_next, mask, nxt, 1.0, 1.5)


def test_lambda_advantages_carry_the_outcome_back() -> None:
    # the episode of test_run_ends_and_lambda_targets: run 0-2 taken over (terminal 0), run 4-5 a success
    mask = np.array([True, True, True, False, True, True])
    nxt = np.array([1, 2, 3, 4, 5, 5])
    terminal = np.array([0, 0, 0, 0, 0, 1], np.float32)
    v = np.array([0.5, 0.5, 0.4, 0.9, 0.6, 0.8], np.float32)
    # lam = 0: one-step advantages, the terminal value at each run's last step
    assert np.allclose(hm.lambda_advantages(v, terminal, mask, nxt, 1.0, 0.0), [0.0, -0.1, -0.4, 0, 0.2, 0.2])
    # lam = 1, gamma = 1: the run's outcome minus V(s_t); the takeover run is negative from its first
    # step although its one-step advantage there is 0
    assert np.allclose(hm.lambda_advantages(v, terminal, mask, nxt, 1.0, 1.0), [-0.5, -0.5, -0.4, 0, 0.4, 0.2])
    a = hm.lambda_advantages(v, terminal, mask, nxt, 0.9, 0.5)
    assert np.isclose(a[5], 0.9 * 1 - 0.8) and np.isclose(a[4], 0.9 * 0.8 - 0.6 + 0.9 * 0.5 * a[5])
    assert a[3] == 0  # not a policy step
    with pytest.raises(ValueError, match="point forward"):
        hm.lambda_advantages(v, terminal, mask, np.array([1, 0, 3, 4, 5, 5]), 1.0, 0.5)
    with pytest.raises(ValueError, match="lam in"):
        hm.lambda_advantages(v, terminal, mask, nxt, 1.0, -0.1)


def test_run_success_marks_only_the_runs_that_end_in_a_success() -> None:
    # episode A: steps 0-5, policy 0-1, takeover 2-3, policy 4-5, success at 5;
    # episode B: steps 6-8, policy throughout, failure (no done_success)
    mask = np.array([1, 1, 0, 0, 1, 1, 1, 1, 1], bool)
    nxt = np.array([1, 2, 3, 4, 5, 5, 7, 8, 8])
    done = np.array([0, 0, 0, 0, 0, 1, 0, 0, 0], bool)
    out = hm.run_success(mask, nxt, done)
    # the run before the takeover failed (it ended in a takeover) even though the episode succeeded
    np.testing.assert_array_equal(out, [0, 0, 0, 0, 1, 1, 0, 0, 0])
    with pytest.raises(ValueError, match="forward"):
        hm.run_success(np.ones(2, bool), np.array([1, 0]), np.zeros(2, bool))


def test_gated_weights_keep_only_the_gated_steps_with_mean_one() -> None:
    adv = np.array([-1.0, 0.0, 1.0, 5.0, 2.0])
    keep = np.array([1, 1, 1, 0, 0], bool)
    w = hm.gated_weights(adv, keep, beta=1.0, w_max=20.0)
    assert w[~keep].tolist() == [0.0, 0.0]  # a failed run counts nothing, whatever its advantage
    assert w[keep].mean() == pytest.approx(1.0)
    assert w[0] < w[1] < w[2]  # the critic ranks inside the kept steps
    # tempering: a larger beta flattens towards filtered BC's equal weights
    w_hot = hm.gated_weights(adv, keep, beta=100.0, w_max=20.0)
    np.testing.assert_allclose(w_hot[keep], 1.0, atol=0.02)
    assert hm.effective_share(w_hot, keep) > hm.effective_share(w, keep)
    # the clip applies after the normalisation, and huge advantages do not overflow
    w_big = hm.gated_weights(np.array([0.0, 1e4]), np.ones(2, bool), beta=1.0, w_max=1.5)
    assert np.isfinite(w_big).all() and w_big.max() == pytest.approx(1.5)
    assert hm.gated_weights(adv, np.zeros(5, bool), 1.0, 20.0).sum() == 0.0
    # beta acts on the kept steps' own spread: scaling the advantages changes nothing
    np.testing.assert_allclose(hm.gated_weights(100 * adv, keep, 1.0, 20.0), w, rtol=1e-5)
    with pytest.raises(ValueError, match="beta"):
        hm.gated_weights(adv, keep, beta=0.0, w_max=20.0)
    with pytest.raises(ValueError, match="shape"):
        hm.gated_weights(adv, keep[:3], beta=1.0, w_max=20.0)


def test_effective_share_counts_the_steps_the_weights_train_on() -> None:
    rows = np.ones(10, bool)
    assert hm.effective_share(np.r_[np.ones(3), np.zeros(7)], rows) == pytest.approx(0.3)
    assert hm.effective_share(np.ones(10), rows) == pytest.approx(1.0)
    assert hm.effective_share(np.r_[10.0, np.ones(9)], rows) < 0.5  # one dominant weight
    assert hm.effective_share(np.zeros(10), rows) == 0.0
