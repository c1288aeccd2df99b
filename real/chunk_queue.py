"""Action queue indexed by absolute control tick, and the alignment arithmetic of async chunking.

Every action in the queue belongs to one control tick (tick k runs at `t0 + k / f`). A chunk that
was requested at tick `k` (after tick k's command went out) holds the actions for ticks
`k + 1 ... k + H`. If it arrives at tick `a > k + 1`, its first `a - k - 1` actions belong to ticks
that have already run: they are stale and are dropped, and the rest continues at the right time
(timestep alignment, as in Black et al. 2025, arXiv 2506.07339, Sec. 4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vla.policy.ensemble import ensemble_weights, valid_rate


@dataclass(frozen=True)
class Alignment:
    """Where a chunk lands in the timeline once stale actions are dropped."""

    kept: np.ndarray  # float[N, A]: the actions for ticks first_tick ... first_tick + N - 1
    first_tick: int
    n_dropped: int


def align_chunk(chunk: np.ndarray, chunk_first_tick: int, arrival_tick: int) -> Alignment:
    """Drop the actions of `chunk` whose tick is before `arrival_tick`.

    `chunk[i]` belongs to tick `chunk_first_tick + i`. Returns the actions still in the future
    (possibly none, when the whole chunk arrived too late).
    """
    chunk = _check_chunk(chunk)
    n_dropped = int(np.clip(arrival_tick - chunk_first_tick, 0, len(chunk)))
    return Alignment(kept=chunk[n_dropped:], first_tick=chunk_first_tick + n_dropped, n_dropped=n_dropped)


def blend_switch(old: np.ndarray, new: np.ndarray, ticks: int) -> np.ndarray:
    """The first `ticks` actions of `new` moved toward `old` (the previous plan for the same ticks):
    action i gets weight (ticks - i) / (ticks + 1) on the old plan, so a chunk switch becomes a ramp
    of `ticks` + 1 smaller steps instead of one step. Temporal ensembling (ACT, arXiv 2304.13705)
    kept to the ticks after a switch; where the old plan has no action for a tick, the new one stays."""
    new = _check_chunk(new).astype(np.float64, copy=True)
    old = np.asarray(old, dtype=np.float64)
    n = min(ticks, len(old), len(new))
    if n > 0:
        w = ((ticks - np.arange(n)) / (ticks + 1))[:, None]
        new[:n] = w * old[:n] + (1 - w) * new[:n]
    return new


def _check_chunk(chunk: np.ndarray) -> np.ndarray:
    chunk = np.asarray(chunk)
    if chunk.ndim != 2:
        raise ValueError(f"an action chunk must be 2-D [H, A], got shape {chunk.shape}")
    if chunk.dtype.kind != "f":
        raise ValueError(f"an action chunk must be floating point, got dtype {chunk.dtype}")
    return chunk


class ChunkQueue:
    """Actions for consecutive ticks `[start_tick, start_tick + len)`, plus which chunk each came from.

    Not thread-safe on purpose: only the control loop touches it (the inference worker hands
    chunks over through the executor, which merges them on the control thread).
    """

    def __init__(self, action_dim: int) -> None:
        if action_dim <= 0:
            raise ValueError(f"action_dim must be positive, got {action_dim}")
        self.action_dim = action_dim
        self.start_tick = 0
        self._actions = np.zeros((0, action_dim), dtype=np.float64)
        self._chunk_ids = np.zeros(0, dtype=np.int64)

    def __len__(self) -> int:
        return len(self._actions)

    @property
    def end_tick(self) -> int:
        """One past the last tick that has an action."""
        return self.start_tick + len(self._actions)

    def remaining_after(self, tick: int) -> int:
        """Number of queued actions for ticks strictly after `tick`."""
        return max(0, self.end_tick - max(tick + 1, self.start_tick))

    def actions_between(self, first_tick: int, stop_tick: int) -> np.ndarray:
        """The queued actions for ticks in `[first_tick, stop_tick)`; stops early at a gap."""
        lo = max(first_tick, self.start_tick) - self.start_tick
        hi = min(stop_tick, self.end_tick) - self.start_tick
        if first_tick < self.start_tick or hi <= lo:
            return np.zeros((0, self.action_dim), dtype=self._actions.dtype)
        return self._actions[lo:hi].copy()

    def pop(self, tick: int) -> tuple[np.ndarray, int] | None:
        """Return (action, chunk_id) for `tick` and forget every earlier tick; None if there is none."""
        self.drop_before(tick)
        if tick < self.start_tick or len(self._actions) == 0:
            return None
        action, chunk_id = self._actions[0].copy(), int(self._chunk_ids[0])
        self.drop_before(tick + 1)
        return action, chunk_id

    def drop_before(self, tick: int) -> int:
        """Forget actions for ticks before `tick`; returns how many were dropped."""
        n = int(np.clip(tick - self.start_tick, 0, len(self._actions)))
        if n:
            self._actions = self._actions[n:]
            self._chunk_ids = self._chunk_ids[n:]
        self.start_tick = max(self.start_tick, tick) if len(self._actions) == 0 else self.start_tick + n
        return n

    def replace(self, actions: np.ndarray, first_tick: int, chunk_id: int) -> None:
        """Throw the queue away and queue `actions` from `first_tick` on."""
        actions = _check_chunk(actions)
        if actions.shape[1] != self.action_dim:
            raise ValueError(f"chunk action dim {actions.shape[1]} != queue action dim {self.action_dim}")
        self._actions = actions.astype(np.float64, copy=True)
        self._chunk_ids = np.full(len(actions), chunk_id, dtype=np.int64)
        self.start_tick = first_tick

    def merge(self, actions: np.ndarray, first_tick: int, chunk_id: int, keep_until_tick: int) -> None:
        """Keep the queued actions for ticks before `keep_until_tick` (committed), then `actions`.

        `actions[i]` belongs to tick `first_tick + i`. Used by `aligned` and `rtc`: the committed
        prefix the policy was shown keeps running exactly, the new chunk takes over after it.
        """
        actions = _check_chunk(actions)
        if actions.shape[1] != self.action_dim:
            raise ValueError(f"chunk action dim {actions.shape[1]} != queue action dim {self.action_dim}")
        n_keep = 0
        if self.start_tick <= first_tick:
            n_keep = int(np.clip(min(keep_until_tick, self.end_tick) - first_tick, 0, len(actions)))
        lo = first_tick - self.start_tick
        kept, kept_ids = self._actions[lo:lo + n_keep], self._chunk_ids[lo:lo + n_keep]
        self._actions = np.concatenate([kept, actions[n_keep:].astype(np.float64)])
        self._chunk_ids = np.concatenate(
            [kept_ids, np.full(len(actions) - n_keep, chunk_id, dtype=np.int64)])
        self.start_tick = first_tick


class TickEnsemble:
    """Temporal ensembling in the executor's timeline: every chunk that arrived keeps its predictions
    for their ticks, and the action for tick k is their mean weighted exp(-rate * age), age = k minus
    the tick the chunk was planned to start at (its first tick before stale actions were dropped).

    ACT's temporal ensemble (arXiv 2304.13705) as the simulator's evaluator runs it
    (`vla.policy.ensemble`, recent predictions weighted most, rate 0.3 there), here for a policy
    that answers late: a chunk arrives when the worker is done, so with a delay of d ticks the
    predictions are d or more ticks old and a new one comes at most every d ticks. The queue's
    interface (`pop`, `drop_before`, `remaining_after`, `end_tick`, `len`) for the executor.
    """

    def __init__(self, action_dim: int, rate: float) -> None:
        if action_dim <= 0:
            raise ValueError(f"action_dim must be positive, got {action_dim}")
        if not valid_rate(rate):
            raise ValueError(f"ensemble rate must be a finite number, got {rate!r}")
        self.action_dim, self.rate = action_dim, float(rate)
        self.start_tick = 0  # the first tick not popped yet: predictions for earlier ticks are never kept
        self._chunks: list[tuple[int, int, np.ndarray, int]] = []  # (first tick, origin tick, actions, chunk id)

    @property
    def end_tick(self) -> int:
        """One past the last tick any chunk has a prediction for."""
        return max((first + len(a) for first, _, a, _ in self._chunks), default=self.start_tick)

    def __len__(self) -> int:
        return max(0, self.end_tick - self.start_tick)

    def remaining_after(self, tick: int) -> int:
        return max(0, self.end_tick - max(tick + 1, self.start_tick))

    def add(self, actions: np.ndarray, first_tick: int, chunk_id: int, origin_tick: int) -> None:
        """`actions[i]` is the prediction for tick `first_tick + i`, from a chunk planned to start at
        `origin_tick` (<= first_tick: the difference is the stale actions dropped on arrival)."""
        actions = _check_chunk(actions)
        if actions.shape[1] != self.action_dim:
            raise ValueError(f"chunk action dim {actions.shape[1]} != ensemble action dim {self.action_dim}")
        if origin_tick > first_tick:
            raise ValueError(f"origin_tick {origin_tick} is after first_tick {first_tick}")
        skip = max(0, self.start_tick - first_tick)
        if skip < len(actions):
            self._chunks.append((first_tick + skip, origin_tick, actions[skip:].astype(np.float64), chunk_id))

    def pop(self, tick: int) -> tuple[np.ndarray, int] | None:
        """(the ensembled action for `tick`, the newest contributing chunk's id), forgetting every
        earlier tick; None if no chunk predicts `tick`."""
        live = [(a[tick - first], tick - origin, cid) for first, origin, a, cid in self._chunks
                if first <= tick < first + len(a)]
        self.drop_before(tick + 1)
        self.start_tick = max(self.start_tick, tick + 1)
        if not live:
            return None
        ages = np.array([age for _, age, _ in live])
        action = np.einsum("i,ij->j", ensemble_weights(ages, self.rate), np.stack([p for p, _, _ in live]))
        return action, live[int(np.argmin(ages))][2]

    def drop_before(self, tick: int) -> int:
        """Forget the predictions for ticks before `tick`; returns how many ticks were forgotten.
        `drop_before(end_tick)` forgets every prediction (the executor's outside hold) without
        refusing the ticks it covered: a chunk that arrives after the hold runs from its first tick."""
        n = max(0, min(tick, self.end_tick) - self.start_tick)
        kept = []
        for first, origin, a, cid in self._chunks:
            cut = max(0, tick - first)
            if cut < len(a):
                kept.append((first + cut, origin, a[cut:], cid))
        self._chunks = kept
        return n
