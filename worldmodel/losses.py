"""The world model's training losses and uncertainty, as pure functions over tensors.

Multi-step latent consistency follows TD-MPC2 (Hansen et al., arXiv 2310.16828): the dynamics is
unrolled from the encoded first observation over H chunks and each predicted latent is pulled to
the (stop-gradient) encoding of the real observation, with weight rho^k on step k. Ours differs in
two places: the dynamics is an ensemble of E heads (each unrolled on its own prediction), so that
their disagreement is an uncertainty (as in MBPO / RAVL's edge-of-reach penalty, arXiv
2402.12527), and steps past the end of an episode are masked instead of being absorbed.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


def horizon_weights(horizon: int, rho: float) -> torch.Tensor:
    """rho^k for k = 0..H-1, normalised to sum to 1 (later chunks count less: errors compound)."""
    if horizon < 1 or not 0 < rho <= 1:
        raise ValueError(f"need horizon >= 1 and 0 < rho <= 1, got {horizon}, {rho}")
    w = rho ** torch.arange(horizon, dtype=torch.float32)
    return w / w.sum()


def _masked_mean(per_item: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of per_item [..., B, H] over the entries where mask [B, H] is true, per horizon step
    -> [..., H] (0 where a step has no valid entry)."""
    m = mask.to(per_item.dtype)
    return (per_item * m).sum(-2) / m.sum(-2).clamp_min(1.0)


def consistency_loss(pred: torch.Tensor, target: torch.Tensor, valid: torch.Tensor, rho: float) -> torch.Tensor:
    """pred [E, B, H, L] (each ensemble member's unrolled latents), target [B, H, L] (encoded real
    observations, gradient stopped by the caller), valid [B, H] -> scalar."""
    err = ((pred - target.unsqueeze(0)) ** 2).mean(-1)  # [E, B, H]
    per_step = _masked_mean(err, valid).mean(0)  # [H]
    return (per_step * horizon_weights(pred.shape[-2], rho).to(pred.device)).sum()


def bce_loss(logits: torch.Tensor, target: torch.Tensor, valid: torch.Tensor, rho: float) -> torch.Tensor:
    """Binary cross-entropy with (soft) targets. logits [E, B, H] or [B, H], target/valid [B, H]."""
    if logits.dim() == 2:
        logits = logits.unsqueeze(0)
    ce = F.binary_cross_entropy_with_logits(logits, target.expand_as(logits), reduction="none")
    per_step = _masked_mean(ce, valid).mean(0)
    return (per_step * horizon_weights(logits.shape[-1], rho).to(logits.device)).sum()


def state_loss(pred: torch.Tensor, target: torch.Tensor, valid: torch.Tensor, rho: float) -> torch.Tensor:
    """Mean squared error of the normalised state. pred [E, B, H, D] or [B, H, D], target [B, H, D]."""
    if pred.dim() == 3:
        pred = pred.unsqueeze(0)
    err = ((pred - target.unsqueeze(0)) ** 2).mean(-1)
    per_step = _masked_mean(err, valid).mean(0)
    return (per_step * horizon_weights(pred.shape[-2], rho).to(pred.device)).sum()


def disagreement(latents: torch.Tensor) -> torch.Tensor:
    """Ensemble disagreement: the standard deviation across members [E, ...,  L], averaged over the
    latent dimensions -> [...]. Zero when every member predicts the same latent."""
    if latents.shape[0] < 2:
        return torch.zeros(latents.shape[1:-1], dtype=latents.dtype, device=latents.device)
    return latents.std(0, unbiased=False).mean(-1)


def value_targets(steps: np.ndarray, length: np.ndarray, success: np.ndarray, gamma: float) -> np.ndarray:
    """Discounted success-to-go at step `steps` of episodes of `length` steps (broadcast together):
    gamma^(T-1-t) where the episode succeeds (its last action reaches success), else 0; a step past
    the end counts as the last. The value head's target (float64)."""
    if not 0 < gamma <= 1:
        raise ValueError(f"value_targets: gamma must be in (0, 1], got {gamma}")
    if np.any(np.asarray(length) < 1):
        raise ValueError(f"value_targets: episode lengths must be >= 1, got min {np.min(length)}")
    return np.where(success, gamma ** np.maximum(length - 1 - steps, 0).astype(np.float64), 0.0)


def simnorm(x: torch.Tensor, groups: int) -> torch.Tensor:
    """TD-MPC2's simplicial normalisation: softmax over groups of the last dimension, which bounds
    the latent and keeps multi-step unrolls from drifting to large norms."""
    shape = x.shape
    if shape[-1] % groups:
        raise ValueError(f"latent size {shape[-1]} is not a multiple of simnorm group {groups}")
    return F.softmax(x.reshape(*shape[:-1], -1, groups), dim=-1).reshape(shape)


def pairwise_rank_loss(scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """RankNet's logistic pairwise loss (Burges et al., ICML 2005) over the candidates of each state:
    scores [..., S, K] (leading dims, e.g. ensemble members, share the labels), labels [S, K]; the mean of
    softplus(s_j - s_i) over every pair (i, j) of one state with label_i > label_j. Ties and states whose
    candidates all share a label add nothing; 0 when no pair is ordered. What it rewards is the order of
    the chunks at one state, which a pointwise loss on states the model already tells apart does not."""
    better = (labels[..., :, None] > labels[..., None, :]).to(scores.dtype)  # [S, K, K]
    pairs = better.sum()
    if pairs == 0:
        return scores.sum() * 0.0  # keeps the graph: a batch without an ordered pair
    margin = scores[..., :, None] - scores[..., None, :]  # [..., S, K, K]: s_i - s_j
    lead = margin[..., 0, 0, 0].numel()  # the leading dims' size (1 without any)
    return (F.softplus(-margin) * better).sum() / (pairs * lead)
