"""Per-step training labels for refinement, computed once over an EpisodeStore.

For every committed step (global index) of the selected episodes: viability label and mask
(intervention-aware, `vla.refine.credit.outcome_labels`), efficiency target gamma^(steps to go)
and its mask (steps of successful policy segments that reach the end of a successful episode),
the demonstration mask (demos and intervention steps), the index of the next step and whether the
step ends the episode in success. HABC's critics and weights, and the RaC / SFT / filtered-BC
baselines all read from this one table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vla.data.store import EpisodeStore
from vla.refine.credit import demo_mask, outcome_labels, segments


@dataclass(frozen=True)
class StepLabels:
    """Arrays over global step indices [0, n_steps) of the store; steps outside the selected
    episodes have every mask False."""

    viability: np.ndarray  # float32 {0, 1}
    viability_mask: np.ndarray  # bool
    efficiency: np.ndarray  # float32 gamma ** steps_to_go
    efficiency_mask: np.ndarray  # bool
    demo: np.ndarray  # bool: supervised as a demonstration
    policy_step: np.ndarray  # bool: executed by a policy (not intervention, not a demo)
    next_index: np.ndarray  # int64: the next step of the episode (itself at the last step)
    done_success: np.ndarray  # bool: last step of a successful episode
    episode: np.ndarray  # int64 episode index (-1 outside the selection)


def build_step_labels(store: EpisodeStore, episodes: np.ndarray | None = None, *, gamma: float = 0.98,
                      current_version: int | None = None) -> StepLabels:
    if not 0.0 < gamma <= 1.0:
        raise ValueError(f"gamma must be in (0, 1], got {gamma}")
    n = store.n_steps
    table = store.table()
    selected = np.arange(len(table)) if episodes is None else np.asarray(episodes, dtype=np.int64)
    flags = np.asarray(store.read("is_intervention", 0, n))
    versions = np.asarray(store.read("policy_version", 0, n))
    out = {
        "viability": np.zeros(n, np.float32), "viability_mask": np.zeros(n, bool),
        "efficiency": np.zeros(n, np.float32), "efficiency_mask": np.zeros(n, bool),
        "demo": np.zeros(n, bool), "policy_step": np.zeros(n, bool),
        "next_index": np.arange(n, dtype=np.int64), "done_success": np.zeros(n, bool),
        "episode": np.full(n, -1, np.int64),
    }
    for ep in selected:
        s, e = int(table.episode_starts[ep]), int(table.episode_ends[ep])
        success, source = bool(table.success[ep]), str(table.source[ep])
        f = flags[s:e]
        out["episode"][s:e] = ep
        out["next_index"][s:e - 1] = np.arange(s + 1, e)
        out["done_success"][e - 1] = success
        out["demo"][s:e] = demo_mask(f, source)
        if source == "demo":
            continue  # demonstrations carry no outcome for the policy's critics
        out["policy_step"][s:e] = ~f
        label, mask = outcome_labels(f, success, versions[s:e], current_version)
        out["viability"][s:e], out["viability_mask"][s:e] = label, mask
        if success:
            last = segments(f)[-1]
            if not last.is_intervention:  # the policy itself reached the goal
                to_go = np.arange(last.end - last.start - 1, -1, -1)
                out["efficiency"][s + last.start:s + last.end] = gamma ** to_go
                out["efficiency_mask"][s + last.start:s + last.end] = mask[last.start:last.end]
    return StepLabels(**out)


def mc_returns(labels: StepLabels, episode_success: np.ndarray, gamma: float) -> np.ndarray:
    """success * gamma^(steps to the episode's end) for every step (0 outside the selection)."""
    n = len(labels.episode)
    out = np.zeros(n, np.float32)
    for ep in np.unique(labels.episode[labels.episode >= 0]):
        idx = np.flatnonzero(labels.episode == ep)
        to_go = np.arange(len(idx) - 1, -1, -1)
        out[idx] = float(episode_success[ep]) * gamma ** to_go
    return out
