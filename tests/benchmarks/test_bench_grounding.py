"""benchmarks/bench_grounding.py: its counting of right, abstained and wrong groundings."""

from __future__ import annotations

import numpy as np

from tests.benchmarks.helpers import load_script

bg = load_script("bench_grounding")


def test_tally_counts_a_vague_probes_choice_as_wrong() -> None:
    assert bg.tally([0, None, 1, 2], [0, 1, 2, None]) == {"n": 4, "right": 1, "abstained": 1, "wrong": 2}


def test_leave_one_out_removes_the_query_from_the_vocabulary() -> None:
    # each text encodes as a fixed vector; with itself in the vocabulary every query would be found
    table = {"a1": [1.0, 0.0, 0.1], "a2": [1.0, 0.1, 0.0], "b1": [0.0, 1.0, 0.0], "b2": [0.1, 1.0, 0.1],
             "lone": [0.7, 0.7, 0.0]}
    encode = lambda texts: np.array([table[t] for t in texts])  # noqa: E731
    groups = [("a1", "a2"), ("b1", "b2", "lone")]
    queries = [(p, i) for i, g in enumerate(groups) for p in g]
    kept = bg.evaluate(encode, groups, queries, False, bg.nearest_phrasing, (0.0,))["0"]
    assert kept == {"n": 5, "right": 5, "abstained": 0, "wrong": 0}
    # left out, 'lone' (equidistant from both groups' directions) is no longer trivially right
    loo = bg.evaluate(encode, groups, queries, True, bg.nearest_phrasing, (0.0, 0.5))
    assert loo["0"]["right"] == 4 and loo["0"]["wrong"] + loo["0"]["abstained"] == 1
    # at a 0.5 cosine lead only the b's, far from every a, still ground; the a's have 'lone' near them
    assert loo["0.5"] == {"n": 5, "right": 2, "abstained": 3, "wrong": 0}
