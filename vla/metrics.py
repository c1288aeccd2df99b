"""Scores shared by vla/ and its plug-ins, as pure numpy functions."""

from __future__ import annotations

import math

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


def t_interval(x: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided t interval of the mean of `x` (e.g. paired differences); NaN with fewer than 2."""
    from scipy import stats

    x = np.asarray(x, dtype=np.float64)
    if len(x) < 2:
        return (float("nan"), float("nan"))
    half = stats.t.ppf(0.5 + confidence / 2, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
    return (float(x.mean() - half), float(x.mean() + half))


def paired_difference(before: dict[int, bool], after: dict[int, bool]) -> dict[str, float | int]:
    """Success after minus before on the seeds both were evaluated on, seed by seed: the mean, its 95%
    t interval, and how many seeds each way (the pairing removes the seeds' own difficulty)."""
    seeds = sorted(set(before) & set(after))
    if not seeds:
        raise ValueError("no seed was evaluated both before and after")
    d = np.array([float(after[s]) - float(before[s]) for s in seeds])
    lo, hi = t_interval(d)
    return {"mean": float(d.mean()), "lo": lo, "hi": hi, "seeds": len(seeds),
            "better": int((d > 0).sum()), "worse": int((d < 0).sum())}


def format_paired(d: dict[str, float | int] | None, digits: int = 3) -> str:
    """A `paired_difference` as a results-table cell: "+0.060 [-0.008, +0.128] (30 / 18)" (the mean, its
    95% interval, seeds better / worse); "-" for None."""
    if d is None:
        return "-"
    return f"{d['mean']:+.{digits}f} [{d['lo']:+.{digits}f}, {d['hi']:+.{digits}f}] ({d['better']} / {d['worse']})"


def shared_success_length_ratio(a: dict[int, int | None], b: dict[int, int | None]) -> tuple[float, int]:
    """Mean length of `a`'s completions over `b`'s on the evaluation seeds both completed
    ({seed: steps to success, None when it failed}), and how many seeds that is; NaN with none.
    Means over each policy's own successes compare different episodes: a policy that also solves
    the hard layouts looks slower for it. On the same seeds only the way of solving differs."""
    seeds = [s for s in sorted(set(a) & set(b)) if a[s] is not None and b[s] is not None]
    if not seeds:
        return float("nan"), 0
    return float(np.mean([a[s] for s in seeds]) / np.mean([b[s] for s in seeds])), len(seeds)


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default)."""
    if n <= 0:
        return (0.0, 1.0)
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, {n}], got {successes}")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # at 0/n and n/n the bound is exactly 0 or 1, but the float sum lands a hair inside it, leaving the rate
    # outside its own interval (a negative error bar: what stopped a job whose policy scored 50/50)
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return (lo, hi)
