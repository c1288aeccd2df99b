"""Intervention-aware credit assignment: pure functions over one episode's step flags.

Shared by HABC (arXiv 2606.17043) and the RaC / HG-DAgger baselines (arXiv 2509.07953). An
episode is a sequence of segments: runs of policy steps (`is_intervention=False`), and runs of
intervention steps, whose first steps may be recovery (`is_recovery`, RaC rewind).

Outcome labels go only to the *current* policy's own segments (HABC): a policy segment that ends
in a takeover is labelled a failure (the person judged failure imminent), the last policy segment
of an episode gets the episode outcome. Intervention and recovery segments are never labelled
with outcomes; they are supervised as demonstrations. Steps of older policy versions get no label
(mask False) because their outcomes say nothing about the current policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np


@dataclass(frozen=True)
class Segment:
    start: int
    end: int  # exclusive
    is_intervention: bool


def segments(is_intervention: np.ndarray) -> list[Segment]:
    """Maximal runs of equal `is_intervention` flags, in order."""
    flags = np.asarray(is_intervention, dtype=bool)
    if flags.ndim != 1:
        raise ValueError(f"is_intervention must be 1-D, got shape {flags.shape}")
    if len(flags) == 0:
        return []
    cuts = np.flatnonzero(flags[1:] != flags[:-1]) + 1
    bounds = [0, *cuts.tolist(), len(flags)]
    return [Segment(a, b, bool(flags[a])) for a, b in pairwise(bounds)]


def outcome_labels(is_intervention: np.ndarray, success: bool, policy_version: np.ndarray | None = None,
                   current_version: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-step viability labels and their mask (see the module docstring).

    Returns (label float32 [T] in {0, 1}, mask bool [T]).
    """
    flags = np.asarray(is_intervention, dtype=bool)
    label = np.zeros(len(flags), np.float32)
    mask = np.zeros(len(flags), bool)
    segs = segments(flags)
    for i, seg in enumerate(segs):
        if seg.is_intervention:
            continue
        ends_in_takeover = i + 1 < len(segs)
        label[seg.start:seg.end] = 0.0 if ends_in_takeover else float(success)
        mask[seg.start:seg.end] = True
    if current_version is not None:
        if policy_version is None:
            raise ValueError("current_version given without policy_version")
        mask &= np.asarray(policy_version) == current_version
    return label, mask


def steps_to_go(length: int) -> np.ndarray:
    """T - 1 - t for t in 0..T-1: steps remaining until the episode's last step."""
    return np.arange(length - 1, -1, -1, dtype=np.int64)


def demo_mask(is_intervention: np.ndarray, source: str) -> np.ndarray:
    """Steps supervised as demonstrations: every step of a demo, intervention steps of others."""
    flags = np.asarray(is_intervention, dtype=bool)
    return np.ones_like(flags) if source == "demo" else flags.copy()
