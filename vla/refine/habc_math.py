"""HABC's pure math: critic targets and losses, the state-adaptive gate, merged one-step advantages
and per-transition BC weights.

Paper: HABC, arXiv 2606.17043. The paper describes two critic heads (viability: will the episode
succeed from here; efficiency: how soon), a state-adaptive gate that favours viability while it is
uncertain and efficiency once it is high, one-step advantages merged into per-transition weights
on the behaviour-cloning loss, and intervention-aware credit. It publishes no formula for the gate
or the losses. Ours (to be ablated: no gate, single critic, no intervention masking):

- Viability V(s) in (0, 1): binary cross-entropy against the outcome labels of
  `vla.refine.credit.outcome_labels` (current policy's own segments only).
- Efficiency E(s) in (0, 1]: regression of gamma^(steps to go) on steps of *successful* policy
  segments (so E = 1 at the goal, decaying with the distance in time).
- Gate g(s) = clip((V(s) - v_low) / (v_high - v_low), 0, 1): 0 (pure viability) while success is
  in doubt, 1 (pure efficiency) once it is near-certain.
- One-step advantages: A_V = V(s') - V(s); A_E = gamma * E(s') - E(s), with E(s') replaced by 1
  when s' ends the episode in success. Along a successful trajectory with an exact E this is
  zero; a step that brings the goal nearer than expected is positive, a wasted step negative.
  Each advantage is divided by its batch standard deviation so the gate mixes comparable scales.
- A = (1 - g) * A_V + g * A_E;  weight w = min(exp(A / beta), w_max) * V(s') on policy steps,
  with V(s') = 1 after the last step of a success. The one-step advantage ranks the policy's
  actions; the viability of the state an action leads to scales the whole weight, so actions the
  critic expects to end in a takeover are not imitated however they rank. Filled in by us: a
  viability critic fitted to per-segment outcome labels is nearly constant inside a segment, so
  one-step advantages there are ~0 and exp(A / beta) gives every policy step, the ones that led
  to a takeover included, the weight of a demonstration; measured on pick_place that imitation of
  the policy's own mistakes took it from 51% to 32% in three rounds, where the same data without
  the policy's steps (HG-DAgger) reached 76%. `scale_by_viability=False` is the unscaled form.
- Intervention steps are demonstrations: weight `demo_weight` regardless of the critics.
- Critic targets that vary inside a segment (the per-segment label alone was memorised,
  loss 0.000, one-step advantages ~0): TD(lambda) over each labelled run of steps,
  G_t = gamma * ((1 - lam) * V(s_{t+1}) + lam * G_{t+1}), ending in the run's own target (its
  outcome label for viability, gamma = 1; 1 at the success for efficiency). lam = 1 gives back the
  Monte-Carlo targets; the critic is refitted on targets bootstrapped from its previous fit.
- Advantages over more than one step (`adv_lambda`, filled in by us): with a smooth critic the
  one-step advantage of nearly every step is ~0, so the weight of a policy step is set by V(s')
  alone, which early in an episode is the same for the episodes that will fail and those that
  will succeed; measured on pick_place without a person, the failed episodes' steps then held
  half of the policy steps' loss mass. GAE(lam) over each run of policy steps
  (`lambda_advantages`, the run's outcome as its terminal value: 1 at a success, 0 at a takeover
  or a time-out; efficiency 1 / gamma at a success) carries the outcome back into the earlier
  steps; lam = 0 gives back the one-step form.
- Outcome-gated, tempered weights (`outcome_gate`, filled in by us): even with GAE, 13-50% of the
  policy steps' loss mass stayed on failed episodes and the weights concentrated on about half as
  many steps as filtered BC trains on (Kish effective share 0.07-0.09 against 0.15; filtered BC
  beat HABC by 10 points over 5 seeds). Gated, a policy step is supervised only if its run of
  policy steps ended in a success (the sparse outcome, known without a critic), and the critic
  only ranks inside those: exp(A / (beta * std)) normalised to mean 1 over the kept steps, so they
  hold the mass filtered BC gives them; beta -> infinity is filtered BC on the successful runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from vla.refine.labels import StepLabels, mc_returns


def run_ends(mask: np.ndarray, next_index: np.ndarray) -> np.ndarray:
    """True at the last step of each run of labelled steps: its next step is itself (the episode's
    last step) or is not labelled (a takeover begins, or the labels stop)."""
    mask = np.asarray(mask, bool)
    idx = np.arange(len(mask))
    return mask & ((next_index == idx) | ~mask[next_index])


def lambda_targets(terminal: np.ndarray, next_value: np.ndarray, mask: np.ndarray, next_index: np.ndarray,
                   gamma: float, lam: float) -> np.ndarray:
    """TD(lambda) targets on the labelled steps (0 elsewhere): `terminal` at each run's last step,
    before it gamma * ((1 - lam) * next_value_t + lam * G_{next}). `next_value_t` is the critic's
    value of the step after t."""
    if not 0.0 <= lam <= 1.0 or not 0.0 < gamma <= 1.0:
        raise ValueError(f"need lam in [0, 1] and gamma in (0, 1], got {lam}, {gamma}")
    mask = np.asarray(mask, bool)
    if np.any(mask & ~run_ends(mask, next_index) & (next_index <= np.arange(len(mask)))):
        raise ValueError("next_index must point forward inside a run of labelled steps")
    last = run_ends(mask, next_index)
    out = np.zeros(len(mask), np.float32)
    for t in np.flatnonzero(mask)[::-1]:
        out[t] = terminal[t] if last[t] else gamma * ((1 - lam) * next_value[t] + lam * out[next_index[t]])
    return out


def lambda_advantages(value: np.ndarray, terminal: np.ndarray, mask: np.ndarray, next_index: np.ndarray,
                      gamma: float, lam: float) -> np.ndarray:
    """GAE(lam) advantages on the labelled runs (0 elsewhere; Schulman et al., arXiv 1506.02438):
    delta_t = gamma * V(s_{t+1}) - V(s_t), with the run's `terminal` value in place of V(s_{t+1})
    at its last step, and A_t = delta_t + gamma * lam * A_{t+1} inside the run. lam = 0 is the
    one-step advantage; lam = 1 (gamma = 1) is the run's outcome minus V(s_t)."""
    if not 0.0 <= lam <= 1.0 or not 0.0 < gamma <= 1.0:
        raise ValueError(f"need lam in [0, 1] and gamma in (0, 1], got {lam}, {gamma}")
    mask = np.asarray(mask, bool)
    last = run_ends(mask, next_index)
    if np.any(mask & ~last & (next_index <= np.arange(len(mask)))):
        raise ValueError("next_index must point forward inside a run of labelled steps")
    out = np.zeros(len(mask), np.float32)
    for t in np.flatnonzero(mask)[::-1]:
        if last[t]:
            out[t] = gamma * terminal[t] - value[t]
        else:
            nxt = next_index[t]
            out[t] = gamma * value[nxt] - value[t] + gamma * lam * out[nxt]
    return out


def run_success(mask: np.ndarray, next_index: np.ndarray, done_success: np.ndarray) -> np.ndarray:
    """True on every step of a run of labelled steps (`mask`, e.g. the policy's own) whose last step
    ends the episode in success; a run that ends at a takeover, a failure or a time-out is False."""
    mask = np.asarray(mask, bool)
    last = run_ends(mask, next_index)
    if np.any(mask & ~last & (next_index <= np.arange(len(mask)))):
        raise ValueError("next_index must point forward inside a run of labelled steps")
    out = np.zeros(len(mask), bool)
    for t in np.flatnonzero(mask)[::-1]:
        out[t] = bool(done_success[t]) if last[t] else out[next_index[t]]
    return out


def gated_weights(advantage: np.ndarray, keep: np.ndarray, beta: float, w_max: float) -> np.ndarray:
    """exp(A / (beta * std)) on the `keep` steps, std the advantages' spread over those steps,
    normalised to mean 1 over them (before the clip at w_max), 0 elsewhere: the outcome gate
    decides which steps count, the advantage only how much each counts among them. Why the kept
    steps' own spread: inside successful runs the lambda-1 advantage 1 - V(s) spans several
    standard deviations of the all-steps advantage, and exp(A / 2) on that scale left 2.6% of the
    policy's steps as the effective sample (pick_place, one round) where filtered BC has ~17%;
    on its own scale beta sets the weights' log-spread to 1 / beta whatever the critic."""
    if beta <= 0 or w_max <= 0:
        raise ValueError(f"beta and w_max must be > 0, got {beta}, {w_max}")
    keep = np.asarray(keep, bool)
    a = np.asarray(advantage, np.float64)
    if a.shape != keep.shape:
        raise ValueError(f"advantage and keep must have the same shape, got {a.shape} and {keep.shape}")
    out = np.zeros(len(keep), np.float32)
    if keep.any():
        k = a[keep]
        # shifted so that exp cannot overflow (the mean absorbs it)
        z = (k - k.max()) / (beta * (k.std() + 1e-6))
        w = np.exp(z)
        out[keep] = np.minimum(w / w.mean(), w_max)
    return out


def effective_share(weights: np.ndarray, rows: np.ndarray) -> float:
    """Kish's effective sample size of `weights` over `rows`, as a share of the rows:
    (sum w)^2 / (sum w^2) / n. Equal weights on k of n rows give k / n."""
    rows = np.asarray(rows, bool)
    w = np.asarray(weights, np.float64)[rows]
    if not len(w) or (w ** 2).sum() <= 0:
        return 0.0
    return float(w.sum() ** 2 / (w ** 2).sum() / len(w))


def viability_loss(logits: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Masked binary cross-entropy; 0 when nothing is labelled."""
    mask = mask.to(logits.dtype)
    per_step = F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype), reduction="none")
    return (per_step * mask).sum() / mask.sum().clamp_min(1.0)


def efficiency_loss(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Masked mean squared error on successful policy steps; 0 when there are none."""
    mask = mask.to(pred.dtype)
    return (((pred - target) ** 2) * mask).sum() / mask.sum().clamp_min(1.0)


def gate(viability: torch.Tensor, v_low: float = 0.3, v_high: float = 0.8) -> torch.Tensor:
    """State-adaptive gate in [0, 1]: weight on efficiency (1 - gate on viability)."""
    if not 0.0 <= v_low < v_high <= 1.0:
        raise ValueError(f"need 0 <= v_low < v_high <= 1, got {v_low}, {v_high}")
    return ((viability - v_low) / (v_high - v_low)).clamp(0.0, 1.0)


def viability_advantage(v: torch.Tensor, v_next: torch.Tensor) -> torch.Tensor:
    return v_next - v


def efficiency_advantage(e: torch.Tensor, e_next: torch.Tensor, done_success: torch.Tensor,
                         gamma: float) -> torch.Tensor:
    """gamma * E(s') - E(s), where E(s') is taken as 1/gamma at a successful end (so the last step
    of an on-time success scores 1 - E(s) = 0 when E(s) = 1)."""
    done = done_success.to(e.dtype)
    return gamma * e_next * (1 - done) + done - e


def standardise(x: torch.Tensor, eps: float = 1e-6, rows: torch.Tensor | None = None) -> torch.Tensor:
    """x / std(x[rows]) (not centred: the sign of an advantage carries its meaning); `rows` (bool)
    are the entries whose spread sets the scale, default all; unchanged with fewer than two."""
    ref = x if rows is None else x[rows]
    if ref.numel() < 2:
        return x
    return x / (ref.std() + eps)


def merged_advantage(a_viability: torch.Tensor, a_efficiency: torch.Tensor, g: torch.Tensor,
                     normalise: bool = True) -> torch.Tensor:
    if normalise:
        a_viability, a_efficiency = standardise(a_viability), standardise(a_efficiency)
    return (1 - g) * a_viability + g * a_efficiency


def bc_weights(advantage: torch.Tensor, is_intervention: torch.Tensor, beta: float = 1.0, w_max: float = 20.0,
               demo_weight: float = 1.0, viability_next: torch.Tensor | None = None) -> torch.Tensor:
    """exp(A / beta) clipped to w_max on policy steps, times `viability_next` (V(s') in [0, 1])
    when given; `demo_weight` on intervention steps."""
    if beta <= 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    w = torch.exp(advantage / beta).clamp(max=w_max)
    if viability_next is not None:
        w = w * viability_next.clamp(0.0, 1.0)
    return torch.where(is_intervention.bool(), torch.full_like(w, demo_weight), w)


def habc_weights(v: torch.Tensor, eff: torch.Tensor, next_index: torch.Tensor, done_success: torch.Tensor,
                 is_intervention: torch.Tensor, args: Any, scale_rows: torch.Tensor | None = None
                 ) -> dict[str, torch.Tensor]:
    """HABC's per-step weights and the terms behind them, from the critics' viability `v` and
    efficiency `eff` on every step: one-step advantages (GAE over each run of `scale_rows` with
    `args.adv_lambda`), each divided by its spread over `scale_rows` (the policy's steps: demo rows
    would dilute it), merged through the gate, exp(A / beta) clipped, times V(s') (1 after a
    success). `args`: gamma, single_critic, use_gate, v_low, v_high, beta, w_max, scale_by_viability,
    adv_lambda (`vla.refine.methods.habc.HabcArgs`). The weight is the policy's steps'; demos and
    corrections get `demo_weight` from the method's loss rule (`vla.refine.methods.habc`), once."""
    if args.single_critic:
        eff = v
    v_next, e_next = v[next_index], eff[next_index]
    if args.adv_lambda is None:
        a_v = viability_advantage(v, v_next)
        a_e = efficiency_advantage(eff, e_next, done_success, args.gamma)
    else:
        runs = (~is_intervention.bool() if scale_rows is None else scale_rows.bool()).numpy()
        done, nxt = done_success.float().numpy(), next_index.numpy()
        a_v = torch.from_numpy(lambda_advantages(v.numpy(), done, runs, nxt, 1.0, args.adv_lambda))
        a_e = torch.from_numpy(lambda_advantages(eff.numpy(), done / args.gamma, runs, nxt, args.gamma,
                                                 args.adv_lambda))
    g = gate(v, args.v_low, args.v_high) if args.use_gate else torch.full_like(v, 0.5)
    if args.single_critic:
        g = torch.zeros_like(v)
    rows = None if scale_rows is None else scale_rows.bool()
    adv = merged_advantage(standardise(a_v, rows=rows), standardise(a_e, rows=rows), g, normalise=False)
    reached = torch.where(done_success.bool(), torch.ones_like(v_next), v_next)  # a success is viable
    w = bc_weights(adv, is_intervention, args.beta, args.w_max,
                   viability_next=reached if args.scale_by_viability else None)
    return {"weight": w, "advantage": adv, "gate": g, "viability": v, "efficiency": eff}


def outcome_only_labels(labels: StepLabels, episode_success: np.ndarray, episode_is_demo: np.ndarray,
                        gamma: float) -> StepLabels:
    """The `mask_interventions=False` ablation of HABC: every rollout step (interventions
    included) is treated as the policy's and labelled with its episode's outcome; only demo
    episodes stay demonstrations."""
    selected = labels.episode >= 0
    ep = np.where(selected, labels.episode, 0)
    demo_step = selected & np.asarray(episode_is_demo, bool)[ep]
    rollout = selected & ~demo_step
    success = np.asarray(episode_success, bool)[ep]
    returns = mc_returns(labels, np.asarray(episode_success, bool), gamma)
    return StepLabels(viability=np.where(rollout, success, 0).astype(np.float32), viability_mask=rollout,
                      efficiency=np.where(rollout & success, returns, 0).astype(np.float32),
                      efficiency_mask=rollout & success, demo=demo_step, policy_step=rollout,
                      next_index=labels.next_index, done_success=labels.done_success, episode=labels.episode)
