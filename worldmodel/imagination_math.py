"""Scores, guard and group-relative weights of imagination refinement and test-time selection:
pure numpy functions.

Rollouts are imagined from real start states (WoVR: keyframe-initialised rollouts; World-Gymnast,
Ctrl-World and World-VLA-Loop likewise improve a policy inside a learned model). Each rollout is
scored by its predicted success, with the value head as a bootstrap for a rollout cut before it
succeeded, minus a penalty on the ensemble's disagreement: truncated model rollouts overestimate
values where the model is unsure (the edge-of-reach problem, RAVL, arXiv 2402.12527). An imagined
success the members disagree on is not believed (hallucination guard). Flow-matching policies
have no tractable likelihood, so the advantage of a rollout over the other K rollouts from the
same start (group-relative, as GRPO, arXiv 2402.03300, without its ratio) weights the
flow-matching loss of its actions, as AWR / filtered BC do, instead of a policy gradient.
Ours differs from the papers in size (a ~1M-parameter latent model, not a video model) and in
training on the first imagined chunks only by default, where the model's error is smallest.
"""

from __future__ import annotations

import numpy as np


def rollout_scores(success_prob: np.ndarray, value_last: np.ndarray, disagreement: np.ndarray, *,
                   value_weight: float = 0.5, disagreement_penalty: float = 0.0) -> np.ndarray:
    """success_prob [N, K chunks], value_last [N] (value at the last imagined latent), disagreement
    [N, K] -> score [N] = p + value_weight * (1 - p) * value_last - penalty * mean disagreement, with
    p = the largest per-chunk success probability (success ends an episode)."""
    p = np.asarray(success_prob, np.float64).max(1)
    v = np.asarray(value_last, np.float64)
    d = np.asarray(disagreement, np.float64).mean(1)
    return p + value_weight * (1.0 - p) * v - disagreement_penalty * d


def guard(success: np.ndarray, disagreement_at_success: np.ndarray, max_disagreement: float) -> np.ndarray:
    """Imagined successes the ensemble disagrees on (above max_disagreement) are dropped -> bool [N]."""
    return np.asarray(success, bool) & (np.asarray(disagreement_at_success, np.float64) <= max_disagreement)


def group_std(scores: np.ndarray, groups: np.ndarray, baseline: np.ndarray | None = None) -> np.ndarray:
    """The spread of each start's scores -> [n groups] (group ids 0..n-1), with the start's `baseline`
    score among them when given. A start whose spread is under `min_std` supervises nothing."""
    s, g = np.asarray(scores, np.float64), np.asarray(groups)
    out = np.zeros(int(g.max()) + 1 if g.size else 0)
    for gid in np.unique(g):
        vals = s[g == gid]
        if baseline is not None:
            vals = np.append(vals, float(baseline[gid]))
        out[gid] = vals.std()
    return out


def group_advantages(scores: np.ndarray, groups: np.ndarray, eps: float = 1e-6, min_std: float = 0.05
                     ) -> np.ndarray:
    """(score - group mean) / group std for rollouts sharing a start (`groups`: [N] ids 0..n-1). A group
    whose scores barely differ (std < min_std) gets 0: its ordering is noise."""
    s, g = np.asarray(scores, np.float64), np.asarray(groups)
    std = group_std(s, g)
    adv = np.zeros_like(s)
    for gid in np.unique(g):
        m = g == gid
        if m.sum() > 1 and std[gid] >= min_std:
            adv[m] = (s[m] - s[m].mean()) / (std[gid] + eps)
    return adv


def baseline_advantages(scores: np.ndarray, groups: np.ndarray, baseline: np.ndarray, eps: float = 1e-6,
                        min_std: float = 0.05) -> np.ndarray:
    """(score - the start's baseline) / spread: each sampled rollout against one reference rollout from
    the same start (`baseline` [n groups]: the policy's deployed, noise-free chunk), so only a sample
    that beats what the policy would do anyway is positive. The group mean of noisy samples sits below
    the deployed chunk wherever noise hurts, and then the best of them is still worse than what the
    policy already does: supervising it pulls the policy toward its own noise (the oracle lost to the
    demos alone that way, benchmarks/results/imagination.md). The spread counts the baseline with the
    samples; a start under min_std gets 0. Ours: GRPO's group baseline (arXiv 2402.03300) replaced by
    the greedy rollout's return, as in self-critical sequence training (arXiv 1612.00563)."""
    s, g = np.asarray(scores, np.float64), np.asarray(groups)
    b = np.asarray(baseline, np.float64)
    std = group_std(s, g, b)
    adv = (s - b[g]) / (std[g] + eps)
    return np.where(std[g] >= min_std, adv, 0.0)


def advantage_weights(adv: np.ndarray, beta: float = 1.0, w_max: float = 5.0, positive_only: bool = True
                      ) -> np.ndarray:
    """Loss weights of rollouts from their advantages: exp(adv / beta) clipped to w_max; with
    positive_only, rollouts no better than their group's mean get 0 (filtered, as the oracle is)."""
    if beta <= 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    a = np.asarray(adv, np.float64)
    w = np.minimum(np.exp(a / beta), w_max)
    if positive_only:
        w = np.where(a > 0, w, 0.0)
    return w.astype(np.float32)


def best_of(scores: np.ndarray, groups: int) -> np.ndarray:
    """Index of the best of K candidates for each of `groups` consecutive blocks: scores [groups * K]."""
    s = np.asarray(scores, np.float64).reshape(groups, -1)
    return s.argmax(1)
