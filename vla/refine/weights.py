"""Which steps each refinement method trains on, and with what weight: pure functions over the
per-step label table (`vla.refine.labels.StepLabels`).

Every method reduces to two arrays over the store's global step indices:
- `loss`: the weight of that step's action in the BC (flow-matching) loss, 0 = not supervised;
- `sample`: the probability mass of drawing a training window that starts at that step.

Methods (same rollouts for sft / filtered_bc / awr / habc; rac and hg_dagger collect their own):
- `sft`: plain BC on every step: demos, the policy's own actions and the interventions.
- `filtered_bc`: demos and every step of successful episodes.
- `awr`: every step, weighted exp(A / beta) with one critic: A = G_t - V(s_t), G_t the discounted
  Monte-Carlo return success * gamma^(steps to go) (Peng et al. 2019, arXiv 1910.00177); demos 1.
- `habc`: demos and intervention steps as demonstrations, the policy's steps weighted by the
  two-critic advantage (`vla.refine.critics.habc_weights`).
- `rac` (arXiv 2509.07953): demos + intervention steps (recovery and correction), mixed with a
  configurable share of demos (`demo_share`, 0.5 by default: the paper trains on both).
- `hg_dagger` (arXiv 1810.02890): demos + intervention steps, aggregated uniformly.
- `dagger` (Ross et al. 2011, arXiv 1011.0686): every step, as `sft`, but the policy's own steps
  carry the expert's action from their state (collected with `label=expert`: the intervener labels
  every step, `sim.intervener.ExpertIntervener.label`), not the action the policy took. Where we
  differ: the scripted person still takes over on a failure as in HG-DAgger (the paper's beta = 0
  lets the policy run on), so a rollout also holds the recovery the expert drives.

With `demo_share = s`, a fraction s of the sampled windows start at demo steps and 1 - s at the
method's other supervised steps (uniform within each group); `None` samples every supervised step
alike. Critic weights enter the loss only (self-normalised per batch by `flow.masked_mse`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from vla.refine import METHODS
from vla.refine.labels import StepLabels

__all__ = [
    "COLLECTION_MODE",
    "GROUPS",
    "METHODS",
    "StepWeights",
    "awr_weights",
    "demo_loss",
    "executed_chunk_ends",
    "group_sample_distribution",
    "group_weight_stats",
    "mc_returns",
    "method_weights",
    "outcome_only_labels",
    "sample_by_loss",
    "sample_distribution",
    "step_groups",
]

# The intervener each method collects its rollouts with: HABC and its baselines share one
# protocol (take over, hand back: the policy's own segments exist before and after a takeover).
COLLECTION_MODE = {"habc": "hg_dagger", "sft": "hg_dagger", "filtered_bc": "hg_dagger", "awr": "hg_dagger",
                   "hg_dagger": "hg_dagger", "dagger": "hg_dagger", "rac": "rac"}


@dataclass(frozen=True)
class StepWeights:
    loss: np.ndarray  # float32 [n_steps], 0 = not supervised
    sample: np.ndarray  # float64 [n_steps], sums to 1 over the selected steps


def mc_returns(labels: StepLabels, episode_success: np.ndarray, gamma: float) -> np.ndarray:
    """success * gamma^(steps to the episode's end) for every step (0 outside the selection)."""
    n = len(labels.episode)
    out = np.zeros(n, np.float32)
    for ep in np.unique(labels.episode[labels.episode >= 0]):
        idx = np.flatnonzero(labels.episode == ep)
        to_go = np.arange(len(idx) - 1, -1, -1)
        out[idx] = float(episode_success[ep]) * gamma ** to_go
    return out


def awr_weights(returns: np.ndarray, values: np.ndarray, beta: float, w_max: float) -> np.ndarray:
    """exp((G - V) / beta), clipped to w_max (advantage-weighted regression)."""
    if beta <= 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    return np.minimum(np.exp((returns - values) / beta), w_max).astype(np.float32)


def demo_loss(table: Any) -> tuple[np.ndarray, np.ndarray]:
    """(loss float32, demo bool) per step of a store's `EpisodeTable`: 1 and True on every demo
    step, 0 and False elsewhere; the start of a plug-in method's weights."""
    starts, ends = table.episode_starts, table.episode_ends
    loss = np.zeros(int(ends[-1]) if len(ends) else 0, np.float32)
    demo = np.zeros_like(loss, dtype=bool)
    for e in np.flatnonzero(table.source == "demo"):
        loss[starts[e]:ends[e]] = 1.0
        demo[starts[e]:ends[e]] = True
    return loss, demo


def sample_distribution(loss: np.ndarray, demo: np.ndarray, demo_share: float | None) -> np.ndarray:
    """Window-start probabilities: uniform over supervised steps (the critics' weights act through
    the loss only, so they are not applied twice), with demos rescaled to `demo_share` of the mass
    when both groups are present."""
    w = (loss > 0).astype(np.float64)
    if w.sum() <= 0:
        raise ValueError("no step is supervised: the selection has no data for this method")
    if demo_share is not None:
        if not 0.0 <= demo_share <= 1.0:
            raise ValueError(f"demo_share must be in [0, 1], got {demo_share}")
        d, o = w * demo, w * ~demo
        if d.sum() > 0 and o.sum() > 0:
            w = demo_share * d / d.sum() + (1 - demo_share) * o / o.sum()
    return w / w.sum()


def method_weights(method: str, labels: StepLabels, episode_success: np.ndarray, episode_is_demo: np.ndarray, *,
                   critic_weight: np.ndarray | None = None, demo_share: float | None = None,
                   demo_weight: float = 1.0, group_shares: dict[str, float] | None = None) -> StepWeights:
    """Loss and sampling weights of `method` (see the module docstring).

    `episode_success`, `episode_is_demo`: per episode of the store. `critic_weight`: per-step
    weights from a critic, required by `habc` (the policy's steps) and `awr` (non-demo steps).
    `demo_weight`: `habc`'s loss weight on demonstrations and corrections (`habc.demo_weight`).
    `group_shares` (e.g. {demo: 0.4, correction: 0.3, policy: 0.3}) fixes each group's share of the
    samples, so methods compare at equal shares; it replaces `demo_share`.
    """
    if demo_weight <= 0:
        raise ValueError(f"demo_weight must be > 0, got {demo_weight}")
    if method not in METHODS:
        raise ValueError(f"unknown refinement method '{method}' (valid: {', '.join(METHODS)})")
    if method in ("habc", "awr") and critic_weight is None:
        raise ValueError(f"method '{method}' needs critic_weight")
    selected = labels.episode >= 0
    ep = np.where(selected, labels.episode, 0)
    demo_step = selected & np.asarray(episode_is_demo, bool)[ep]
    correction = labels.demo & ~demo_step  # intervention (recovery + correction) steps of rollouts
    loss = np.zeros(len(selected), np.float32)
    if method in ("sft", "dagger"):  # dagger's policy steps hold the expert's labels (the collection's doing)
        loss[selected] = 1.0
    elif method == "filtered_bc":
        loss[demo_step | (selected & np.asarray(episode_success, bool)[ep])] = 1.0
    elif method == "awr":
        assert critic_weight is not None
        loss[selected] = np.where(demo_step[selected], 1.0, critic_weight[selected])
    elif method == "habc":
        assert critic_weight is not None
        loss[labels.demo] = demo_weight
        loss[labels.policy_step] = critic_weight[labels.policy_step]
    else:  # rac, hg_dagger: demonstrations and corrections only
        loss[demo_step | correction] = 1.0
    if group_shares:
        groups = step_groups(labels, episode_is_demo)
        return StepWeights(loss=loss, sample=group_sample_distribution(loss, groups, group_shares))
    return StepWeights(loss=loss, sample=sample_distribution(loss, demo_step, demo_share))


GROUPS = ("demo", "correction", "policy")


def step_groups(labels: StepLabels, episode_is_demo: np.ndarray) -> dict[str, np.ndarray]:
    """Each step's group: demo (demo episodes), correction (intervention steps of rollouts),
    policy (steps the policy executed)."""
    selected = labels.episode >= 0
    ep = np.where(selected, labels.episode, 0)
    demo_step = selected & np.asarray(episode_is_demo, bool)[ep]
    return {"demo": demo_step, "correction": labels.demo & ~demo_step, "policy": labels.policy_step & ~demo_step}


def group_sample_distribution(loss: np.ndarray, groups: dict[str, np.ndarray], shares: dict[str, float]
                              ) -> np.ndarray:
    """Window-start probabilities with a fixed share of samples per group (as RaC fixes the demos'
    share), uniform over the supervised steps inside a group; groups without a supervised step
    give their share to the others in proportion."""
    unknown = sorted(set(shares) - set(GROUPS))
    if unknown:
        raise ValueError(f"group_shares: unknown group '{unknown[0]}' (valid: {', '.join(GROUPS)})")
    if any(v < 0 for v in shares.values()) or sum(shares.values()) <= 0:
        raise ValueError(f"group_shares must be >= 0 with a positive sum, got {shares}")
    supervised = loss > 0
    w = np.zeros(len(loss), np.float64)
    for g, share in shares.items():
        member = supervised & groups[g]
        if share > 0 and member.any():
            w[member] += share / member.sum()
    if w.sum() <= 0:
        raise ValueError(f"no supervised step in the groups {sorted(shares)} with a positive share")
    return w / w.sum()


def sample_by_loss(w: StepWeights, groups: dict[str, np.ndarray]) -> StepWeights:
    """Move per-step loss weights into the sampler: inside each (disjoint) group the window starts are drawn
    in proportion to sample * loss, each group keeps its share of the samples, and every supervised
    step's loss weight becomes 1. The expected gradient inside a group keeps its direction; what
    changes is that a group whose steps carry small weights (HABC's critic gives most of the
    policy's failed steps ~0.01) still fills its share with the steps it endorses, instead of
    spending most of that share on windows that barely count."""
    mass = w.sample * w.loss
    sample = np.zeros_like(w.sample)
    members = [np.asarray(m, bool) for m in groups.values()]  # disjoint, as `step_groups` makes them
    members.append(~np.any(members, axis=0))  # steps in no group keep their own mass, moved the same way
    for member in members:
        total = mass[member].sum()
        if total > 0:
            sample[member] = w.sample[member].sum() * mass[member] / total
    if sample.sum() <= 0:
        raise ValueError("sample_by_loss: no supervised step carries sampling mass")
    return StepWeights(loss=(w.loss > 0).astype(np.float32), sample=sample / sample.sum())


def executed_chunk_ends(episode_starts: np.ndarray, episode_ends: np.ndarray, own: np.ndarray,
                        n_action_steps: int) -> np.ndarray:
    """Per global step, the exclusive end of the actions a window starting there supervises
    (`WindowDataset(supervise_until=)`): for the policy's own steps (`own`) the end of the chunk
    it executed, and the episode's end for every other step. A rollout re-plans every
    `n_action_steps` from the first step of each run of the policy's steps, and a takeover ends
    the chunk (`sim.eval_worker.run_episode` empties the queue). Why: a window of the policy's own
    steps that runs past its chunk imitates the seam between two independently sampled chunks; on
    pick_place rollouts the action changes 1.9x as much there as inside a chunk (1.14x in demos)."""
    if n_action_steps < 1:
        raise ValueError(f"n_action_steps must be >= 1, got {n_action_steps}")
    starts, ends = np.asarray(episode_starts, np.int64), np.asarray(episode_ends, np.int64)
    n = int(ends[-1]) if len(ends) else 0
    own = np.asarray(own, bool)
    if own.shape != (n,):
        raise ValueError(f"own must have one value per store step, shape ({n},), got {own.shape}")
    out = np.zeros(n, np.int64)
    for s, e in zip(starts, ends, strict=True):
        out[s:e] = e
        flags = own[s:e]
        cuts = np.flatnonzero(np.diff(flags.astype(np.int8))) + 1
        for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), e - s], strict=True):
            if flags[a]:  # a run of the policy's steps [s + a, s + b)
                t = np.arange(a, b)
                out[s + a:s + b] = s + np.minimum(a + ((t - a) // n_action_steps + 1) * n_action_steps, b)
    return out


def group_weight_stats(w: StepWeights, groups: dict[str, np.ndarray]) -> dict[str, float]:
    """Per group: its share of the samples and the distribution of its loss weights (mean, 10/50/90th
    percentiles over its supervised steps), flat keys for train_info.json."""
    out: dict[str, float] = {}
    for g, member in groups.items():
        sup = member & (w.loss > 0)
        out[f"{g}_sample_share"] = float(w.sample[member].sum())
        out[f"{g}_supervised_steps"] = float(sup.sum())
        vals = w.loss[sup] if sup.any() else np.zeros(1)
        out[f"{g}_weight_mean"] = float(vals.mean())
        for q in (10, 50, 90):
            out[f"{g}_weight_p{q}"] = float(np.percentile(vals, q))
    return out


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
