import numpy as np

from vla.metrics import auroc, average_ranks


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
