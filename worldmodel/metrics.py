"""Scores of a world model and of a policy ranking, as pure numpy functions.

- AUROC and expected calibration error (ECE) of predicted success probabilities.
- Ranking agreement between a proxy (imagined success) and real success: Spearman, Pearson,
  pairwise accuracy, and MMRV, the mean maximum rank violation of SimplerEnv (Li et al., arXiv
  2405.05941): for each policy, the largest real-success gap to another policy whose order the
  proxy gets wrong, averaged over policies (0 = every pair ordered right; in success units).
- Bootstrap intervals over policies for all of them.
- At the chunk level (issue 63: does the model rank the chunks proposed at one state as the simulator
  would?), over states S x candidates K: the within-state Spearman between score and true value, the
  best-vs-worst AUROC (how often the truly best candidate outscores the truly worst) and the regret of
  executing the model's pick (true best value minus the pick's). Ours; the chunk-level framing follows
  test-time selection with a learnt verifier (e.g. V-GPS, arXiv 2410.13816, which scores an action per state).
  Read against controls of their own: how far the truth agrees with itself over its continuations (the ceiling),
  a prior that scores each candidate by its kind alone (no model), and the figures among the policy's own chunks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vla.metrics import auroc, average_ranks

__all__ = ["auroc", "best_vs_worst_auroc", "bootstrap_interval", "chunk_report", "ece", "kind_prior_scores", "mmrv",
           "pairwise_accuracy", "pearson", "rank_report", "selection_ceiling", "selection_ceilings",
           "selection_regret", "spearman", "truth_reliability", "within_state_spearman"]


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


def _grid(scores: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s, v = np.asarray(scores, np.float64), np.asarray(values, np.float64)
    if s.ndim != 2 or s.shape != v.shape:
        raise ValueError(f"scores and values must both be [states, candidates], got {s.shape} and {v.shape}")
    return s, v


def within_state_spearman(scores: np.ndarray, values: np.ndarray) -> tuple[float, int]:
    """Mean over states of Spearman(score, true value) among that state's candidates, and how many states
    count: a state whose candidates all have the same true value orders nothing and is left out (nan, 0
    when none is left). A model that scores every candidate alike counts as 0 there."""
    s, v = _grid(scores, values)
    rhos = []
    for row_s, row_v in zip(s, v, strict=True):
        if np.ptp(row_v) == 0:
            continue
        rho = spearman(row_s, row_v)
        rhos.append(0.0 if not np.isfinite(rho) else rho)
    return (float(np.mean(rhos)) if rhos else float("nan"), len(rhos))


def best_vs_worst_auroc(scores: np.ndarray, values: np.ndarray) -> tuple[float, int]:
    """Share of states (whose candidates differ in true value) where a candidate of the highest true value
    scores above one of the lowest, ties in score counting one half (each state's best and worst sets
    compared by their mean score); and how many states count."""
    s, v = _grid(scores, values)
    wins = []
    for row_s, row_v in zip(s, v, strict=True):
        if np.ptp(row_v) == 0:
            continue
        best, worst = row_s[row_v == row_v.max()].mean(), row_s[row_v == row_v.min()].mean()
        wins.append(1.0 if best > worst else 0.5 if best == worst else 0.0)
    return (float(np.mean(wins)) if wins else float("nan"), len(wins))


def selection_regret(scores: np.ndarray, values: np.ndarray, default: int | None = None) -> dict[str, float]:
    """Mean over states of (best true value - true value of the highest-scored candidate; ties in score take
    their mean value), and, with `default` (the candidate a policy executes without selection, e.g. its
    noise-free chunk), that candidate's regret and the gain of selecting (default's regret - pick's)."""
    s, v = _grid(scores, values)
    top = s == s.max(1, keepdims=True)
    picked = (v * top).sum(1) / top.sum(1)
    out = {"regret": float((v.max(1) - picked).mean()), "picked_value": float(picked.mean()),
           "best_value": float(v.max(1).mean())}
    if default is not None:
        out["default_regret"] = float((v.max(1) - v[:, default]).mean())
        out["gain_over_default"] = float((picked - v[:, default]).mean())
    return out


def _both_ways(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    """within_state_spearman of a against b and of b against a, averaged: neither half is the truth."""
    (r1, n1), (r2, n2) = within_state_spearman(a, b), within_state_spearman(b, a)
    return float(np.nanmean([r1, r2])) if n1 or n2 else float("nan"), max(n1, n2)


def truth_reliability(success: np.ndarray) -> dict[str, float]:
    """How far a truth set's own values agree with themselves [S, K, M continuations]: the ceiling of any
    model's within-state Spearman on it. `split_half_spearman`: the continuations split in two halves (every
    split, each half against the other), `spearman_brown` the same projected to all M (2r / (1 + r));
    `one_rollout_ceiling`: the mean of M - 1 continuations against the one left out, what an almost exact
    success probability scores against a truth of one rollout per candidate (the sets before continuations
    were sampled had one). NaN where M < 2 (one rollout cannot be checked against itself)."""
    from itertools import combinations

    ok = np.asarray(success, np.float64)
    if ok.ndim != 3:
        raise ValueError(f"success must be [states, candidates, continuations], got shape {ok.shape}")
    m = ok.shape[2]
    out = {"continuations": m, "split_half_spearman": float("nan"), "spearman_brown": float("nan"),
           "one_rollout_ceiling": float("nan")}
    if m < 2:
        return out
    halves = [h for h in combinations(range(m), m // 2) if 0 in h]  # each split once
    rhos = [_both_ways(ok[:, :, list(h)].mean(-1), ok[:, :, [j for j in range(m) if j not in h]].mean(-1))[0]
            for h in halves]
    r = float(np.nanmean(rhos))
    out["split_half_spearman"] = r
    out["spearman_brown"] = 2 * r / (1 + r) if r > -1 else float("nan")
    loo = [within_state_spearman(np.delete(ok, j, axis=2).mean(-1), ok[:, :, j])[0] for j in range(m)]
    out["one_rollout_ceiling"] = float(np.nanmean(loo))
    return out


def selection_ceiling(success: np.ndarray, default: int = 0, candidates: list[int] | None = None,
                      n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
    """What choosing among a state's candidates can gain at most, once the luck of the continuations is taken
    out [S, K, M continuations]: the candidate with the best mean over half of the continuations (a perfect
    model of that half; a tie keeps `default`, the chunk executed without selection) is scored on the other
    half against `default` on the same half, for every split and both ways. A truth set's best-of-K value
    (`selection_regret`'s best_value) also counts the candidate that was lucky in its one continuation, which no
    model can foresee; this is what a selector could take, and the bar `wm_select_gain` stands under.
    `candidates`: the columns to choose among (e.g. the policy's own chunks), `default` among them. `gain_interval`:
    95% percentile bootstrap over the states. NaN where M < 2."""
    from itertools import combinations

    ok = np.asarray(success, np.float64)
    if ok.ndim != 3:
        raise ValueError(f"success must be [states, candidates, continuations], got shape {ok.shape}")
    cols = list(range(ok.shape[1])) if candidates is None else list(candidates)
    if default not in cols:
        raise ValueError(f"default candidate {default} is not among the candidates {cols}")
    ok, d = ok[:, cols], cols.index(default)
    m = ok.shape[2]
    if m < 2:
        return {"continuations": m, "gain": float("nan"), "gain_interval": [float("nan")] * 2,
                "picked_value": float("nan"), "default_value": float("nan"), "states_picking_another": float("nan")}
    gains, picked, base, moved = [], [], [], []  # each [S] per split and direction
    for h in (h for h in combinations(range(m), m // 2) if 0 in h):
        rest = [j for j in range(m) if j not in h]
        for a, b in ((list(h), rest), (rest, list(h))):
            pick_mean, judge = ok[:, :, a].mean(-1), ok[:, :, b].mean(-1)
            pick = np.where(pick_mean.max(1) > pick_mean[:, d], pick_mean.argmax(1), d)
            chosen = judge[np.arange(len(judge)), pick]
            gains.append(chosen - judge[:, d])
            picked.append(chosen)
            base.append(judge[:, d])
            moved.append(pick != d)
    per_state = np.mean(gains, axis=0)
    # over the states (the splits are not independent of one another): a percentile bootstrap of the mean
    lo, hi = bootstrap_interval(lambda g, _: float(g.mean()), per_state, per_state, n_boot, seed)
    return {"continuations": m, "candidates": len(cols), "gain": float(per_state.mean()), "gain_interval": [lo, hi],
            "picked_value": float(np.mean(picked)), "default_value": float(np.mean(base)),
            "states_picking_another": float(np.mean(moved))}


# what a candidate is (worldmodel.chunk_truth's meta "candidate_kinds") -> the kind prior's score: the policy's
# noise-free chunk above its samples above copies with noise added, no model at all
KIND_PRIOR = {"noise_free": 2.0, "noisy": 1.0, "perturbed": 0.0}
POLICY_KINDS = ("noise_free", "noisy")  # the chunks a policy itself proposes


def kind_prior_scores(kinds: list[str], states: int) -> np.ndarray:
    """The control every chunk-level figure is read against [states, K]: each candidate scored by its kind only."""
    unknown = sorted(set(kinds) - set(KIND_PRIOR))
    if unknown:
        raise ValueError(f"unknown candidate kinds {unknown} (known: {sorted(KIND_PRIOR)})")
    return np.tile(np.array([KIND_PRIOR[k] for k in kinds], np.float64), (states, 1))


def selection_ceilings(success: np.ndarray, kinds: list[str] | None = None) -> dict[str, Any]:
    """`selection_ceiling` over a truth set's candidates against its noise-free chunk (candidate 0), and, with the
    candidates' `kinds`, among the chunks the policy itself proposes (what test-time selection chooses from)."""
    out = {"all": selection_ceiling(success, 0)}
    if kinds is not None:
        out["policy_samples"] = selection_ceiling(success, 0, [i for i, k in enumerate(kinds) if k in POLICY_KINDS])
    return out


def _figures(scores: np.ndarray, values: np.ndarray, default: int | None) -> dict[str, float]:
    rho, n_rho = within_state_spearman(scores, values)
    auc, _ = best_vs_worst_auroc(scores, values)
    return {"chunk_spearman": rho, "chunk_auroc_best_vs_worst": auc, "states_that_order": n_rho,
            "states": int(np.asarray(values).shape[0]), **selection_regret(scores, values, default)}


def chunk_report(scores: np.ndarray, values: np.ndarray, default: int | None = 0,
                 kinds: list[str] | None = None) -> dict[str, Any]:
    """Every chunk-level figure of a model's scores against a truth set's values. With the candidates' `kinds`
    also `policy_samples` (the same figures among the chunks the policy itself proposes: its noise-free chunk and
    its samples, where choosing is what test-time selection does) and `kind_prior` (the kind-only control, on all
    candidates and on the policy's samples): a set whose perturbed copies nearly always fail is ordered well by
    knowing only which candidates were perturbed, and a model's figures mean something only above that."""
    out: dict[str, Any] = _figures(scores, values, default)
    if kinds is None:
        return out
    s, v = _grid(scores, values)
    if len(kinds) != v.shape[1]:
        raise ValueError(f"{len(kinds)} candidate kinds for {v.shape[1]} candidates")
    own = [i for i, k in enumerate(kinds) if k in POLICY_KINDS]
    own_default = own.index(default) if default in own else None
    prior = kind_prior_scores(kinds, v.shape[0])
    out["policy_samples"] = _figures(s[:, own], v[:, own], own_default)
    out["kind_prior"] = {**_figures(prior, v, default),
                         "policy_samples": _figures(prior[:, own], v[:, own], own_default)}
    return out
