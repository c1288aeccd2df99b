"""ReGuide's math as pure functions: phases of the demonstrations, prototype distances, the
guidance gate and the phase state machine (ReGuide, arXiv 2606.28939; code tzuhsiangl/reguide).

- Phases: k-means over per-frame features of the demos ([latent, proprio, action] here; the
  released code uses [visual latent, proprio, their deltas]), clusters ordered by their median
  normalised demo time and merged into `n_phases` contiguous groups of that order. The released
  code merges by time bins; ours merges by rank so that no phase is ever empty.
- Distance of a latent to a phase: the softmin over the phase's prototypes,
  d = -tau * log sum_j exp(-||z - g_j|| / tau) (-> the nearest prototype's distance as tau -> 0).
- Gate: guidance acts only when the predicted next latent has drifted but is recoverable,
  lower < d <= upper (per-phase percentiles of the demos' own distances); none in distribution,
  none far out of it.
- Phase switch: to the next phase after `min_steps` consecutive chunks whose predicted latent is
  closer to the next phase than to the current one by `margin` and within the next phase's switch
  threshold (the released code's rule; its margin is absolute, ours is in units of the softmin
  temperature tau, so it does not depend on the latent's scale).
- Guidance space (ours, not the paper's): distances may be measured on task-frame features of the
  predicted state instead of the latent, a linear map of the state (`state_feature_matrix`: dims
  and differences of dims such as gripper-to-object offsets). With few demos a latent prototype
  is a demo of another object layout, so the latent distance pulls the arm toward where the
  object was in that demo; offsets relative to the object are the same in every layout.
"""

from __future__ import annotations

import numpy as np
import torch


def kmeans(x: np.ndarray, k: int, seed: int = 0, iters: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """k-means++ initialisation and Lloyd iterations: (centres [k, F], labels [N])."""
    x = np.asarray(x, np.float64)
    n = len(x)
    if not 1 <= k <= n:
        raise ValueError(f"kmeans: k must be in 1..{n} (the number of points), got {k}")
    rng = np.random.default_rng(seed)
    centres = [x[rng.integers(n)]]
    for _ in range(1, k):
        d2 = np.min(((x[:, None] - np.asarray(centres)[None]) ** 2).sum(-1), axis=1)
        total = d2.sum()
        centres.append(x[rng.choice(n, p=d2 / total)] if total > 0 else x[rng.integers(n)])
    c = np.asarray(centres)
    labels = np.zeros(n, np.int64)
    for _ in range(iters):
        labels_new = np.argmin(((x[:, None] - c[None]) ** 2).sum(-1), axis=1)
        for j in range(k):
            members = x[labels_new == j]
            if len(members):
                c[j] = members.mean(0)
        if np.array_equal(labels_new, labels):
            break
        labels = labels_new
    return c, labels_new


def phases_from_clusters(labels: np.ndarray, t_norm: np.ndarray, n_phases: int) -> np.ndarray:
    """Phase per point: clusters ordered by median normalised time, split by rank into `n_phases`
    contiguous groups (phase 0 holds the earliest clusters)."""
    clusters = np.unique(labels)
    if not 1 <= n_phases <= len(clusters):
        raise ValueError(f"n_phases must be in 1..{len(clusters)} (the clusters found), got {n_phases}")
    medians = np.array([np.median(t_norm[labels == c]) for c in clusters])
    rank = np.empty(len(clusters), np.int64)
    rank[np.argsort(medians, kind="stable")] = np.arange(len(clusters))
    phase_of_cluster = rank * n_phases // len(clusters)
    return phase_of_cluster[np.searchsorted(clusters, labels)]


def softmin_distance(z: torch.Tensor, protos: torch.Tensor, tau: float, mask: torch.Tensor | None = None
                     ) -> torch.Tensor:
    """z [B, L], protos [B, P, L] (or [P, L]) -> [B]: -tau * log sum exp(-||z - g|| / tau) over the
    prototypes (`mask` [B, P] / [P] False = padding, ignored): at most the nearest prototype's
    distance, less where many prototypes are near (it can go below 0: only its order matters,
    the thresholds come from the same formula on the demos)."""
    if protos.dim() == 2:
        protos = protos.unsqueeze(0).expand(z.shape[0], -1, -1)
    d = torch.linalg.vector_norm(z[:, None] - protos, dim=-1)
    if mask is not None:
        d = torch.where(mask.expand_as(d), d, torch.full_like(d, float("inf")))
    tau = max(float(tau), 1e-8)
    return -tau * torch.logsumexp(-d / tau, dim=1)


def phase_thresholds(dist: np.ndarray, phase: np.ndarray, n_phases: int, percentiles: list[float]) -> np.ndarray:
    """[n_phases, len(percentiles)]: percentiles of the demos' own distances per phase (a phase
    without points takes the percentiles over all points)."""
    out = np.empty((n_phases, len(percentiles)), np.float64)
    for j in range(n_phases):
        d = dist[phase == j]
        out[j] = np.percentile(d if len(d) else dist, percentiles)
    return out


def guidance_gate(d: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Guide only in the drifted-but-recoverable band: lower < d <= upper."""
    return (d > lower) & (d <= upper)


def late_step(t: float, num_steps: int, late_fraction: float) -> bool:
    """True for the last `late_fraction` of the K Euler steps (flow time t runs 0 -> 1; ReGuide
    guides the last 10-30 of 100 denoising steps). At least the last step when late_fraction > 0."""
    if late_fraction <= 0:
        return False
    n_late = max(1, round(late_fraction * num_steps))
    return t >= 1.0 - n_late / num_steps - 1e-9


def phase_step(phase: np.ndarray, counter: np.ndarray, d_cur: np.ndarray, d_next: np.ndarray,
               thr_next: np.ndarray, margin: float, min_steps: int, n_phases: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """One chunk of the phase state machine, per row: (new phase, new counter)."""
    phase, counter = phase.copy(), counter.copy()
    can = phase < n_phases - 1
    better = (d_next < d_cur - margin) & (d_next <= thr_next) & can
    counter = np.where(better, counter + 1, 0)
    switch = counter >= min_steps
    phase = np.where(switch, phase + 1, phase)
    counter = np.where(switch, 0, counter)
    return phase, counter


def state_feature_matrix(spec: str, state_dim: int) -> np.ndarray:
    """[F, state_dim]: the linear map of a state onto the features `spec` names, comma-separated
    terms, each a dim `i`, a slice `a:b`, or a difference of two equal-width slices or dims
    `a:b-c:d` (state[a:b] - state[c:d]). An empty spec is every dim."""
    if not spec.strip():
        return np.eye(state_dim)

    def dims(part: str, term: str) -> list[int]:
        try:
            if ":" in part:
                a, b = (int(x) for x in part.split(":"))
                idx = list(range(a, b))
            else:
                idx = [int(part)]
        except ValueError:
            raise ValueError(f"state_features: cannot read {term!r} (terms are i, a:b or a:b-c:d)") from None
        if not idx:
            raise ValueError(f"state_features: {term!r} selects no dims")
        if min(idx) < 0 or max(idx) >= state_dim:
            raise ValueError(f"state_features: {term!r} is outside the state's {state_dim} dims")
        return idx

    rows: list[np.ndarray] = []
    for term in (t.strip() for t in spec.split(",")):
        plus, _, minus = term.partition("-")
        pos = dims(plus.strip(), term)
        neg = dims(minus.strip(), term) if minus else []
        if neg and len(neg) != len(pos):
            raise ValueError(f"state_features: {term!r} subtracts {len(neg)} dims from {len(pos)}")
        for k, i in enumerate(pos):
            row = np.zeros(state_dim)
            row[i] += 1.0
            if neg:
                row[neg[k]] -= 1.0
            rows.append(row)
    return np.stack(rows)
