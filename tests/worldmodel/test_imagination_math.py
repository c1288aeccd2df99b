import numpy as np
import pytest

from worldmodel.imagination_math import (
    advantage_weights,
    baseline_advantages,
    best_of,
    group_advantages,
    group_std,
    guard,
    rollout_scores,
)


def test_scores_reward_success_bootstrap_value_and_penalise_disagreement() -> None:
    p = np.array([[0.1, 0.9], [0.1, 0.2], [0.1, 0.2]])
    v = np.array([0.0, 0.8, 0.0])
    d = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
    s = rollout_scores(p, v, d, value_weight=0.5, disagreement_penalty=0.1)
    assert s[0] == pytest.approx(0.9)  # succeeded: the value adds only (1 - p) of itself
    assert s[1] == pytest.approx(0.2 + 0.5 * 0.8 * 0.8)
    assert s[2] == pytest.approx(0.2 - 0.1)
    assert s[0] > s[1] > s[2]


def test_guard_drops_successes_the_ensemble_disagrees_on() -> None:
    ok = guard(np.array([True, True, False]), np.array([0.01, 0.5, 0.0]), max_disagreement=0.1)
    assert ok.tolist() == [True, False, False]


def test_group_advantages_are_relative_within_a_start_and_zero_for_flat_groups() -> None:
    scores = np.array([0.2, 0.8, 0.5, 0.5, 0.0, 1.0])
    groups = np.array([0, 0, 1, 1, 2, 2])
    adv = group_advantages(scores, groups)
    assert adv[0] < 0 < adv[1] and adv[2] == adv[3] == 0.0
    assert adv[:2].sum() == pytest.approx(0.0) and adv[4] == pytest.approx(-adv[5])
    # the same scores one level higher give the same advantages: only the ranking within a start counts
    assert np.allclose(group_advantages(scores + 0.3, groups), adv)


def test_baseline_advantages_supervise_only_samples_that_beat_the_deployed_chunk() -> None:
    scores = np.array([0.2, 0.45, 0.61, 0.5, 0.5, 0.5, 0.1, 0.3])
    groups = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    deployed = np.array([0.5, 0.5, 0.9])
    adv = baseline_advantages(scores, groups, deployed, min_std=0.05)
    # start 0: only the sample above the deployed 0.5 is positive, though two are above the group mean 0.42
    assert adv[2] > 0 > adv[1] > adv[0]
    assert (group_advantages(scores, groups)[1:3] > 0).all()
    assert (adv[3:6] == 0).all()  # start 1: every sample ties the deployed chunk
    assert (adv[6:] < 0).all()  # start 2: the deployed chunk beats every sample, so nothing is supervised
    assert (advantage_weights(adv)[3:] == 0).all()
    # the spread counts the deployed chunk: a flat group far below it is not flat
    assert group_std(scores, groups, deployed)[2] > group_std(scores, groups)[2]
    assert np.allclose(baseline_advantages(scores + 0.3, groups, deployed + 0.3), adv)


def test_advantage_weights_filter_clip_and_reject_a_bad_temperature() -> None:
    adv = np.array([-1.0, 0.0, 0.5, 10.0])
    w = advantage_weights(adv, beta=1.0, w_max=5.0)
    assert w.tolist() == pytest.approx([0.0, 0.0, np.exp(0.5), 5.0])
    assert (advantage_weights(adv, positive_only=False) > 0).all()
    with pytest.raises(ValueError, match="beta"):
        advantage_weights(adv, beta=0.0)


def test_best_of_picks_per_block() -> None:
    assert best_of(np.array([0.1, 0.9, 0.3, 0.7, 0.2, 0.1]), 2).tolist() == [1, 0]
