"""Scores of a world model and of a policy ranking, as pure numpy functions.

- AUROC and expected calibration error (ECE) of predicted success probabilities.
- Ranking agreement between a proxy (imagined success) and real success: Spearman, Pearson,
  pairwise accuracy, and MMRV, the mean maximum rank violation of SimplerEnv (Li et al., arXiv
  2405.05941): for each policy, the largest real-success gap to another policy whose order the
  proxy gets wrong, averaged over policies (0 = every pair ordered right; in success units).
- Bootstrap intervals over policies for all of them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vla.metrics import auroc, average_ranks

__all__ = ["auroc", "bootstrap_interval", "ece", "mmrv", "pairwise_accuracy", "pearson", "rank_report",
           "spearman"]


def ece(probs: np.ndarray, labels: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error with equal-width bins: sum over bins of |accuracy - confidence|
    weighted by the bin's share of the samples."""
    p, y = np.asarray(probs, np.float64), np.asarray(labels, np.float64)
    if len(p) == 0:
        return float("nan")
    idx = np.minimum((p * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        sel = idx == b
        if sel.any():
            total += sel.mean() * abs(y[sel].mean() - p[sel].mean())
    return float(total)


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.std() == 0 or b.std() == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    return pearson(average_ranks(np.asarray(a, np.float64)), average_ranks(np.asarray(b, np.float64)))


def mmrv(proxy: np.ndarray, real: np.ndarray) -> float:
    """Mean maximum rank violation (SimplerEnv): lower is better, 0 is a perfect ordering."""
    p, r = np.asarray(proxy, np.float64), np.asarray(real, np.float64)
    n = len(r)
    if n < 2:
        return float("nan")
    gaps = np.abs(r[:, None] - r[None, :])
    violated = (p[:, None] < p[None, :]) != (r[:, None] < r[None, :])
    return float((gaps * violated).max(1).mean())


def pairwise_accuracy(proxy: np.ndarray, real: np.ndarray) -> float:
    """Share of policy pairs with different real success that the proxy orders the same way."""
    p, r = np.asarray(proxy, np.float64), np.asarray(real, np.float64)
    i, j = np.triu_indices(len(r), 1)
    keep = r[i] != r[j]
    if not keep.any():
        return float("nan")
    agree = np.sign(p[i] - p[j]) == np.sign(r[i] - r[j])
    return float(agree[keep].mean())


RANK_METRICS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "spearman": spearman, "pearson": pearson, "mmrv": mmrv, "pairwise_accuracy": pairwise_accuracy}


def bootstrap_interval(metric: Callable[[np.ndarray, np.ndarray], float], proxy: np.ndarray, real: np.ndarray,
                       n: int = 2000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of metric(proxy, real), resampling policies with replacement
    (resamples that leave the metric undefined are skipped)."""
    p, r = np.asarray(proxy, np.float64), np.asarray(real, np.float64)
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(n):
        idx = rng.integers(0, len(r), len(r))
        v = metric(p[idx], r[idx])
        if np.isfinite(v):
            vals.append(v)
    if not vals:
        return (float("nan"), float("nan"))
    lo, hi = np.quantile(vals, [(1 - level) / 2, 1 - (1 - level) / 2])
    return (float(lo), float(hi))


def rank_report(proxy: np.ndarray, real: np.ndarray, seed: int = 0) -> dict[str, dict[str, float]]:
    """Every ranking metric with its bootstrap interval: {name: {value, lo, hi}}."""
    out = {}
    for name, fn in RANK_METRICS.items():
        lo, hi = bootstrap_interval(fn, proxy, real, seed=seed)
        out[name] = {"value": fn(proxy, real), "lo": lo, "hi": hi}
    return out
