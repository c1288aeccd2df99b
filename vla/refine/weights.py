"""How a refinement method's per-step weights become training windows: pure functions over the
per-step label table (`vla.refine.labels.StepLabels`), shared by every method.

A method's weighting rule (vla/refine/methods/, worldmodel/) reduces to two arrays over the store's
global step indices (`StepWeights`):
- `loss`: the weight of that step's action in the BC (flow-matching) loss, 0 = not supervised;
- `sample`: the probability mass of drawing a training window that starts at that step.

With `demo_share = s`, a fraction s of the sampled windows start at demo steps and 1 - s at the
method's other supervised steps (uniform within each group); `None` samples every supervised step
alike. `group_shares` fixes a share per group (demo, correction, policy) instead. Critic weights
enter the loss only (self-normalised per batch by `flow.masked_mse`) unless `sample_by_loss` moves
them into the sampler.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from vla.refine.labels import StepLabels

__all__ = [
    "GROUPS",
    "StepWeights",
    "demo_loss",
    "executed_chunk_ends",
    "group_sample_distribution",
    "group_weight_stats",
    "sample_by_loss",
    "sample_distribution",
    "shaped",
    "step_groups",
]

@dataclass(frozen=True)
class StepWeights:
    loss: np.ndarray  # float32 [n_steps], 0 = not supervised
    sample: np.ndarray  # float64 [n_steps], sums to 1 over the selected steps


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
    the chunk (`sim.eval_worker.run_eval_episode` empties the queue). Why: a window of the policy's own
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


def shaped(loss: np.ndarray, labels: StepLabels, episode_is_demo: np.ndarray, demo_share: float | None = None,
           group_shares: dict[str, float] | None = None, by_loss: bool = False
           ) -> tuple[StepWeights, dict[str, float]]:
    """A method's per-step loss weights with the sampler every built-in method shares: fixed group
    shares when given, else `demo_share` of the windows from the demos; `by_loss` then moves the loss
    weights into the sampler (`sample_by_loss`). Returns the weights and their figures per group (taken
    before any move to the sampler) with the count of supervised steps."""
    groups = step_groups(labels, episode_is_demo)
    if group_shares:
        w = StepWeights(loss=loss, sample=group_sample_distribution(loss, groups, group_shares))
    else:
        w = StepWeights(loss=loss, sample=sample_distribution(loss, groups["demo"], demo_share))
    info = group_weight_stats(w, groups)
    if by_loss:
        w = sample_by_loss(w, groups)
    info["supervised_steps"] = float((w.loss > 0).sum())
    return w, info
