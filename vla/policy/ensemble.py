"""Temporal ensembling of overlapping action chunks (ACT, Zhao et al., arXiv 2304.13705).

The policy is queried at every control step; the executed action is a weighted mean of what every
chunk still in play predicted for this step, with weight exp(-rate * age), age being how many steps
ago that chunk was predicted.

Where ours differs: ACT weights the *oldest* prediction most (w_i = exp(-m i), i = 0 the oldest, m =
0.01: rate = -0.01 here). On the main job's pick_place policy (a flow policy sampled at the prior's
mean) recent predictions weighted most did better: rate 0.2-0.5 scored 0.905 against 0.87 with ACT's
weights and 0.83 for chunks executed 4 steps at a time, while executing only each chunk's first
action (one prediction, no mean) scored 0.51 (experiments/results/ensemble.md). So the mean of a few
recent predictions is what helps, not the re-planning itself.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def ensemble_weights(ages: np.ndarray, rate: float) -> np.ndarray:
    """Normalised weights of predictions made `ages` steps ago: exp(-rate * age) / sum."""
    ages = np.asarray(ages, dtype=np.float64)
    if ages.ndim != 1 or ages.size == 0 or np.any(ages < 0):
        raise ValueError(f"ages must be a non-empty 1-d array of steps >= 0, got {ages!r}")
    logits = -rate * ages
    w = np.exp(logits - logits.max())  # shifted: a large |rate| must not overflow
    return w / w.sum()


def valid_rate(rate: float) -> bool:
    return isinstance(rate, (int, float)) and not isinstance(rate, bool) and math.isfinite(rate)


def valid_every(every: int) -> bool:
    """A query stride (`temporal_ensemble_every`): an integer >= 1."""
    return isinstance(every, int) and every >= 1


class TemporalEnsemble:
    """The chunks predicted so far and the current step: `add` the chunk predicted at this step,
    `action()` is this step's ensembled action, `advance()` moves to the next step (chunks whose
    predictions have all passed are dropped); `reset()` forgets everything (a new episode, or when
    someone else had control and the predictions are stale)."""

    def __init__(self, rate: float, horizon: int | None = None) -> None:
        if not valid_rate(rate):
            raise ValueError(f"temporal ensemble rate must be a finite number, got {rate!r}")
        if horizon is not None and horizon < 1:
            raise ValueError(f"temporal ensemble horizon must be >= 1 (or None: the whole chunk), got {horizon}")
        self.rate, self.horizon = float(rate), horizon
        self.reset()

    def reset(self) -> None:
        self.t = 0
        self._chunks: list[tuple[int, np.ndarray]] = []

    def add(self, chunk: np.ndarray) -> None:
        chunk = np.asarray(chunk, dtype=np.float32)
        if chunk.ndim != 2 or len(chunk) == 0:
            raise ValueError(f"a chunk is (steps, action_dim), got shape {chunk.shape}")
        if self._chunks and chunk.shape[1] != self._chunks[0][1].shape[1]:
            raise ValueError(f"chunk action_dim {chunk.shape[1]} differs from the earlier "
                             f"{self._chunks[0][1].shape[1]}")
        self._chunks.append((self.t, chunk[: self.horizon] if self.horizon else chunk))

    def live(self) -> bool:
        """Whether some chunk predicts the current step."""
        return any(self.t - t0 < len(c) for t0, c in self._chunks)

    def action(self) -> np.ndarray:
        live = [(self.t - t0, c[self.t - t0]) for t0, c in self._chunks if self.t - t0 < len(c)]
        if not live:
            raise RuntimeError("no chunk predicts this step: add one first")
        ages = np.array([age for age, _ in live])
        w = ensemble_weights(ages, self.rate)
        return (w[:, None] * np.stack([a for _, a in live])).sum(0).astype(np.float32)

    def advance(self) -> None:
        self.t += 1
        self._chunks = [(t0, c) for t0, c in self._chunks if self.t - t0 < len(c)]


class ChunkSchedule:
    """Which action runs at each control step, from a policy's chunks: either `n_action_steps` of each chunk
    in turn, or (`rate` set) the temporal ensemble of the chunks predicted so far, with a new chunk every
    `every` steps (between queries the mean of the chunks already in play) or sooner when none predicts this
    step. One schedule for the evaluator's workers and the diagnostics that replay its episodes
    (experiments/failure_modes.py, dagger_labels.py, mw_reach_misses.py), so all execute a checkpoint the same way.

    Per step: `action(policy, obs)` (it asks `policy.sample_chunk([obs])` only when a chunk is due), then, after the env
    stepped, `executed(by_policy)`; an action someone else chose (a person who took over) makes the
    schedule forget its chunks, and the policy re-plans from wherever control comes back."""

    def __init__(self, n_action_steps: int, rate: float | None = None, every: int = 1) -> None:
        if not (isinstance(n_action_steps, int) and n_action_steps >= 1):
            raise ValueError(f"n_action_steps must be an integer >= 1, got {n_action_steps!r}")
        if not valid_every(every):
            raise ValueError(f"temporal_ensemble_every must be an integer >= 1, got {every!r}")
        self.n_action_steps, self.every = n_action_steps, every
        self.ensemble = TemporalEnsemble(rate) if rate is not None else None
        self.reset()

    def reset(self) -> None:
        self._queue: list[np.ndarray] = []
        self._since = 0  # steps since the ensemble's last query
        if self.ensemble is not None:
            self.ensemble.reset()

    def action(self, policy: Any, obs: Any) -> tuple[np.ndarray, bool]:
        """This step's action, and whether the policy was queried for it."""
        ens = self.ensemble
        if not self._queue and ens is not None and 0 < self._since < self.every and ens.live():
            self._queue, self._since = [ens.action()], self._since + 1
        if self._queue:
            return self._queue[0], False
        chunk = np.asarray(policy.sample_chunk([obs]))[0]
        if ens is not None:
            ens.add(chunk)
            self._queue, self._since = [ens.action()], 1
        else:
            self._queue = list(chunk[: self.n_action_steps])
        return self._queue[0], True

    def executed(self, by_policy: bool = True) -> None:
        if by_policy:
            self._queue.pop(0)
        else:
            self.reset()
        if self.ensemble is not None:
            self.ensemble.advance()
