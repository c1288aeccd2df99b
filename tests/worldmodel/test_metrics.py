import numpy as np
import pytest

from worldmodel.metrics import auroc, bootstrap_interval, ece, mmrv, pairwise_accuracy, pearson, rank_report, spearman


def test_auroc() -> None:
    y = np.array([0, 0, 1, 1])
    assert auroc(np.array([0.1, 0.2, 0.8, 0.9]), y) == 1.0
    assert auroc(np.array([0.9, 0.8, 0.2, 0.1]), y) == 0.0
    assert auroc(np.full(4, 0.5), y) == 0.5
    assert auroc(np.array([0.1, 0.6, 0.5, 0.9]), y) == 0.75
    assert np.isnan(auroc(np.array([0.1, 0.2]), np.array([1, 1])))


def test_ece() -> None:
    assert ece(np.array([0.0, 0.0, 1.0, 1.0]), np.array([0, 0, 1, 1])) == 0.0
    assert ece(np.array([1.0, 1.0]), np.array([0, 0])) == 1.0
    # one bin at 0.75 confidence with accuracy 0.5
    assert ece(np.full(4, 0.75), np.array([1, 0, 1, 0])) == pytest.approx(0.25)


def test_rank_correlations() -> None:
    real = np.array([0.1, 0.3, 0.5, 0.9])
    assert spearman(real ** 2, real) == pytest.approx(1.0)
    assert spearman(-real, real) == pytest.approx(-1.0)
    assert pearson(2 * real + 1, real) == pytest.approx(1.0)
    assert np.isnan(pearson(np.ones(4), real))


def test_mmrv_is_zero_for_a_perfect_order_and_the_largest_violated_gap_otherwise() -> None:
    real = np.array([0.1, 0.3, 0.9])
    assert mmrv(np.array([1.0, 2.0, 3.0]), real) == 0.0
    # the proxy swaps policies 0 and 1 (gap 0.2): both get 0.2, policy 2 none -> 0.4 / 3
    assert mmrv(np.array([2.0, 1.0, 3.0]), real) == pytest.approx(0.4 / 3)
    # swapping the extremes costs more
    assert mmrv(np.array([3.0, 2.0, 1.0]), real) > mmrv(np.array([2.0, 1.0, 3.0]), real)


def test_pairwise_accuracy_skips_ties_in_real_success() -> None:
    real = np.array([0.2, 0.2, 0.8])
    assert pairwise_accuracy(np.array([0.0, 1.0, 2.0]), real) == 1.0
    assert pairwise_accuracy(np.array([3.0, 1.0, 2.0]), real) == 0.5


def test_bootstrap_interval_brackets_the_value() -> None:
    rng = np.random.default_rng(0)
    real = np.linspace(0.1, 0.9, 8)
    proxy = real + rng.normal(0, 0.1, 8)
    lo, hi = bootstrap_interval(spearman, proxy, real, n=300)
    assert lo <= spearman(proxy, real) <= hi <= 1.0
    rep = rank_report(proxy, real)
    assert set(rep) == {"spearman", "pearson", "mmrv", "pairwise_accuracy"}
    assert all(set(v) == {"value", "lo", "hi"} for v in rep.values())


def test_chunk_metrics_order_within_each_state_and_skip_states_that_order_nothing() -> None:
    from worldmodel.metrics import best_vs_worst_auroc, chunk_report, selection_regret, within_state_spearman

    values = np.array([[1.0, 0.5, 0.0], [0.2, 0.2, 0.2], [0.0, 1.0, 0.5]])
    perfect = np.array([[3.0, 2.0, 1.0], [5.0, 1.0, 0.0], [1.0, 3.0, 2.0]])
    assert within_state_spearman(perfect, values) == (1.0, 2)  # the all-equal state counts for nothing
    assert best_vs_worst_auroc(perfect, values) == (1.0, 2)
    reversed_ = -perfect
    assert within_state_spearman(reversed_, values)[0] == -1.0 and best_vs_worst_auroc(reversed_, values)[0] == 0.0
    flat = np.zeros_like(values)
    assert within_state_spearman(flat, values)[0] == 0.0 and best_vs_worst_auroc(flat, values)[0] == 0.5
    r = selection_regret(reversed_, values, default=0)
    # the reversed model picks 0.0 in state 0, any of the equal 0.2s (0.2) in state 1 and 0.0 in state 2
    assert r["regret"] == pytest.approx((1.0 + 0.0 + 1.0) / 3) and r["default_regret"] == pytest.approx(1.0 / 3)
    assert r["gain_over_default"] == pytest.approx(-1 / 3)  # state 0: 0.0 picked where the default had 1.0
    tie = selection_regret(flat, values)  # all tied: the mean of the state's values
    assert tie["picked_value"] == pytest.approx(np.mean(values.mean(1)))
    rep = chunk_report(perfect, values)
    assert rep["chunk_spearman"] == 1.0 and rep["regret"] == 0.0 and rep["states_that_order"] == 2
    with pytest.raises(ValueError, match=r"\[states, candidates\]"):
        within_state_spearman(np.zeros(3), np.zeros(3))


def test_a_truth_whose_continuations_agree_is_reliable_and_one_of_coin_flips_is_not() -> None:
    from worldmodel.metrics import truth_reliability

    # every continuation of a candidate ends the same way: the halves order the candidates identically
    p = np.array([[0.0, 1.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0, 1.0]])
    steady = np.repeat(p[:, :, None], 4, axis=2)
    r = truth_reliability(steady)
    assert r["continuations"] == 4 and r["split_half_spearman"] == 1.0 and r["spearman_brown"] == 1.0
    assert r["one_rollout_ceiling"] == 1.0
    # every candidate a fair coin: the halves agree by chance only
    flips = np.random.default_rng(0).random((400, 8, 4)) < 0.5
    r = truth_reliability(flips)
    assert abs(r["split_half_spearman"]) < 0.05 and abs(r["one_rollout_ceiling"]) < 0.05
    # candidates of different success probabilities: reliable, but below 1 with 4 rollouts
    probs = np.linspace(0.05, 0.95, 8)
    drawn = np.random.default_rng(1).random((400, 8, 4)) < probs[None, :, None]
    r = truth_reliability(drawn)
    assert 0.3 < r["split_half_spearman"] < r["spearman_brown"] < 1.0
    assert np.isnan(truth_reliability(drawn[:, :, :1])["split_half_spearman"])
    with pytest.raises(ValueError, match=r"\[states, candidates, continuations\]"):
        truth_reliability(np.zeros((3, 4)))


def test_the_kind_prior_orders_a_set_whose_perturbed_copies_fail_and_policy_samples_are_read_apart() -> None:
    from worldmodel.metrics import chunk_report, kind_prior_scores

    kinds = ["noise_free", "noisy", "noisy", "perturbed"]
    # the perturbed copy always fails; among the policy's own chunks the second sample is the best
    values = np.array([[0.5, 0.25, 1.0, 0.0], [1.0, 0.5, 0.75, 0.0]])
    prior = kind_prior_scores(kinds, 2)
    assert prior.tolist() == [[2.0, 1.0, 1.0, 0.0]] * 2
    # a model that knows only what was perturbed: as good as the prior over all candidates, nothing among the samples
    model = np.array([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0]])
    rep = chunk_report(model, values, kinds=kinds)
    assert rep["chunk_auroc_best_vs_worst"] == 1.0 and rep["policy_samples"]["chunk_spearman"] == 0.0
    assert rep["kind_prior"]["chunk_auroc_best_vs_worst"] == 1.0
    # the policy-sample figures are those of the first three candidates, the default still the noise-free chunk
    assert rep["policy_samples"]["states"] == 2 and rep["policy_samples"]["default_regret"] == pytest.approx(0.25)
    # one that orders the samples right scores 1 there, where the prior (noise-free first) does not
    right = np.array([[1.0, 0.0, 2.0, -1.0], [2.0, 0.0, 1.0, -1.0]])
    assert chunk_report(right, values, kinds=kinds)["policy_samples"]["chunk_spearman"] == 1.0
    assert rep["kind_prior"]["policy_samples"]["chunk_spearman"] < 1.0
    assert "policy_samples" not in chunk_report(model, values)  # no kinds: the figures as before
    with pytest.raises(ValueError, match="unknown candidate kinds"):
        kind_prior_scores(["noise_free", "mystery"], 1)
    with pytest.raises(ValueError, match="3 candidate kinds for 4 candidates"):
        chunk_report(model, values, kinds=kinds[:3])


def test_the_selection_ceiling_takes_what_a_candidate_is_worth_not_what_its_continuations_drew() -> None:
    from worldmodel.metrics import selection_ceiling, selection_ceilings

    # candidate 2 always succeeds, the default (0) never: a selector gains 1 on every state
    steady = np.zeros((5, 3, 4))
    steady[:, 2] = 1.0
    c = selection_ceiling(steady, default=0)
    assert c["gain"] == 1.0 and c["picked_value"] == 1.0 and c["default_value"] == 0.0
    assert c["states_picking_another"] == 1.0 and c["continuations"] == 4 and c["gain_interval"] == [1.0, 1.0]
    # every candidate the same coin: best-of-K looks good on one draw, but a pick made on half the continuations
    # is worth nothing on the other half
    flips = (np.random.default_rng(0).random((2000, 8, 4)) < 0.5).astype(float)
    c = selection_ceiling(flips)
    assert abs(c["gain"]) < 0.02 and flips[:, :, 0].max(1).mean() > 0.99
    lo, hi = c["gain_interval"]
    assert lo < c["gain"] < hi and hi - lo < 0.05  # over 2000 states the interval is narrow around it
    # among a subset of the candidates (the policy's own) the better one outside it is not taken
    only_own = selection_ceiling(steady, default=0, candidates=[0, 1])
    assert only_own["gain"] == 0.0 and only_own["states_picking_another"] == 0.0 and only_own["candidates"] == 2
    both = selection_ceilings(steady, ["noise_free", "noisy", "perturbed"])
    assert both["all"]["gain"] == 1.0 and both["policy_samples"]["gain"] == 0.0
    assert np.isnan(selection_ceiling(steady[:, :, :1])["gain"])
    with pytest.raises(ValueError, match="default candidate 2 is not among"):
        selection_ceiling(steady, default=2, candidates=[0, 1])
    with pytest.raises(ValueError, match=r"\[states, candidates, continuations\]"):
        selection_ceiling(np.zeros((3, 4)))
