"""Scores shared by vla/ and its plug-ins, as pure numpy functions."""

from __future__ import annotations

import numpy as np


def average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks of `x`; ties share their mean rank."""
    x = np.asarray(x, np.float64)
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    # each run of equal values gets the mean of the positions it spans
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
    ends = np.r_[starts[1:], len(x)]
    mean_rank = (starts + ends + 1) / 2.0
    ranks = np.empty(len(x), np.float64)
    ranks[order] = np.repeat(mean_rank, ends - starts)
    return ranks


def auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve (the Mann-Whitney U statistic; ties count one half). NaN when one
    class is missing."""
    s, y = np.asarray(scores, np.float64), np.asarray(labels, bool)
    pos, neg = s[y], s[~y]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    ranks = average_ranks(np.concatenate([pos, neg]))
    u = ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2
    return float(u / (len(pos) * len(neg)))
