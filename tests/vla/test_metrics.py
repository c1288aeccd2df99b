import numpy as np
import pytest

from vla.metrics import (
    auroc,
    average_ranks,
    format_paired,
    paired_difference,
    shared_success_length_ratio,
    t_interval,
    wilson_interval,
)


def test_ranks_share_ties() -> None:
    assert average_ranks(np.array([3.0, 1.0, 3.0, 2.0])).tolist() == [3.5, 1.0, 3.5, 2.0]


def test_auroc_is_the_pairwise_probability_with_half_ties() -> None:
    rng = np.random.default_rng(0)
    s = rng.integers(0, 5, 200).astype(float)  # many ties
    y = rng.random(200) < 0.3 + 0.1 * s
    pos, neg = s[y], s[~y]
    brute = ((pos[:, None] > neg[None]).sum() + 0.5 * (pos[:, None] == neg[None]).sum()) / (len(pos) * len(neg))
    assert auroc(s, y) == brute
    assert np.isnan(auroc(s, np.zeros(200, bool)))


def test_t_interval_matches_the_textbook_value() -> None:
    lo, hi = t_interval(np.array([1.0, 2.0, 3.0, 4.0]))
    half = 3.182446 * np.std([1, 2, 3, 4], ddof=1) / 2  # t(0.975, 3) * s / sqrt(4)
    assert lo == pytest.approx(2.5 - half, abs=1e-5) and hi == pytest.approx(2.5 + half, abs=1e-5)
    assert all(np.isnan(t_interval(np.array([1.0]))))


def test_paired_difference_pairs_by_seed_and_counts_each_way() -> None:
    before = {1: False, 2: False, 3: True, 4: True, 9: True}
    after = {4: True, 3: False, 2: True, 1: True, 7: False}  # seeds 7 and 9 are unpaired: left out
    d = paired_difference(before, after)
    assert d["seeds"] == 4 and d["better"] == 2 and d["worse"] == 1 and d["mean"] == 0.25
    assert (d["lo"], d["hi"]) == pytest.approx(t_interval(np.array([1.0, 1.0, -1.0, 0.0])))
    with pytest.raises(ValueError, match="no seed"):
        paired_difference({1: True}, {2: True})


def test_shared_success_length_ratio_compares_only_the_seeds_both_completed() -> None:
    # a also solves seed 3, slowly: over its own successes it looks slower, on the shared ones faster
    a = {1: 40, 2: 60, 3: 150, 4: None, 8: 10}
    b = {1: 50, 2: 70, 3: None, 4: 45, 9: 20}  # 8 and 9 are unpaired, 4 failed by a
    ratio, n = shared_success_length_ratio(a, b)
    assert n == 2 and ratio == pytest.approx(50 / 60)
    ratio, n = shared_success_length_ratio({1: None}, {1: 30})
    assert n == 0 and np.isnan(ratio)


def test_format_paired_writes_the_mean_interval_and_counts() -> None:
    d = paired_difference({1: False, 2: True, 3: False, 4: True}, {1: True, 2: True, 3: False, 4: False})
    cell = format_paired(d)
    assert cell.startswith("+0.000 [") and cell.endswith("] (1 / 1)")
    assert format_paired({"mean": 0.06, "lo": -0.008, "hi": 0.128, "better": 30, "worse": 18}, digits=2) \
        == "+0.06 [-0.01, +0.13] (30 / 18)"
    assert format_paired(None) == "-"


def test_wilson_interval_holds_its_own_rate_at_every_count() -> None:
    # 50/50 once came out as [0.93, 0.9999999999999999]: a negative error bar, and the plot that drew it raised
    for n in range(1, 301):
        for k in range(n + 1):
            lo, hi = wilson_interval(k, n)
            assert lo <= k / n <= hi, (k, n, lo, hi)
    assert wilson_interval(50, 50)[1] == 1.0 and wilson_interval(0, 50)[0] == 0.0


def test_wilson_interval_known_values() -> None:
    lo, hi = wilson_interval(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-4) and hi == pytest.approx(0.9433, abs=1e-4)
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == pytest.approx(1.0)
    lo, hi = wilson_interval(50, 100)
    assert lo < 0.5 < hi and hi - lo == pytest.approx(0.1921, abs=1e-3)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(11, 10)
