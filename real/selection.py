"""Test-time selection of action chunks: sample N chunks in one batched call and
execute the one chosen by
- coherence with the plan being replaced: bidirectional decoding's backward coherence (Liu et al.,
  arXiv 2408.17355): the candidate's actions after the committed prefix against the previous
  chunk's planned actions for the same ticks (smaller difference = smoother switch);
- a coin-flipping network (CFN, Lobel et al., arXiv 2306.03186) as TACO's anti-exploration verifier
  ("Steering Vision-Language-Action Models as Anti-Exploration"): a small network fitted to map
  each (state, chunk) of successful data to its own random +-1 code; on familiar inputs its output
  norm is small (||f||^2 ~ d / pseudo-count), so -||f||^2 ranks candidates by how in-distribution
  they are;
- smoothness at the switch (`smooth`): how little the candidate's actions change across the end of
  the committed prefix (the aligned executor's switch point);
- or both coherence and cfn (each score standardised over the N candidates, summed).
Spec for the evaluator and the deployment stack: `select:ckpt=POLICY,n=8,by=coherence|smooth|cfn|both,cfn=DIR,decay=1`
(`executed=8`: the actions run from each chunk when no committed prefix tells, the evaluator's
n_action_steps).
Ours differs from TACO in the features (the state and the chunk's first actions, not the policy's
internal features) and from bidirectional decoding in using only its backward term.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from vla.policy.config import check_sampling_noise
from vla.policy.specs import spec_args, spec_loader
from vla.registry import POLICY_SPECS

BY = ("coherence", "smooth", "cfn", "both")


def previous_offset(prefix: np.ndarray, previous: np.ndarray, atol: float = 1e-5) -> int | None:
    """Where the committed prefix [P, A] starts inside the previous chunk [H, A] (the executor takes
    the prefix from it), or None when it is not there. Both are compared inside the action range
    [-1, 1]: the sampler's raw output can overshoot it slightly, and what was executed (and comes
    back as the prefix) was clipped to it."""
    p = len(prefix)
    prefix, previous = np.clip(prefix, -1.0, 1.0), np.clip(previous, -1.0, 1.0)
    for e in range(len(previous) - p + 1):
        if np.allclose(previous[e:e + p], prefix, atol=atol):
            return e
    return None


def discounted_mean(per_tick: np.ndarray, decay: float) -> np.ndarray:
    """[N, T] -> [N]: the mean over ticks with tick i weighted by decay**i."""
    w = float(decay) ** np.arange(per_tick.shape[1])
    return (per_tick * w).sum(axis=1) / w.sum()


def coherence_scores(candidates: np.ndarray, previous_tail: np.ndarray, start: int, decay: float = 1.0
                     ) -> np.ndarray:
    """candidates [N, H, A], the previous chunk's plan for the ticks from `start` on [M, A] ->
    [N]: minus the squared difference over the overlap, tick i weighted by decay**i (BID's backward
    coherence discounts later ticks; 1 = uniform), normalised; 0 when nothing overlaps."""
    m = min(len(previous_tail), candidates.shape[1] - start)
    if m <= 0:
        return np.zeros(len(candidates))
    diff = candidates[:, start:start + m] - previous_tail[None, :m]
    return -discounted_mean((diff ** 2).mean(axis=2), decay)


def smoothness_scores(candidates: np.ndarray, start: int, ticks: int = 4, decay: float = 1.0) -> np.ndarray:
    """candidates [N, H, A] whose first `start` actions are the committed prefix -> [N]: minus the
    (decay-weighted) squared change between consecutive actions over the `ticks` after the prefix,
    the last prefix action included: how smoothly each continues what the arm is already doing. An
    aligned executor triggers when the previous plan is nearly spent, so little of it is left after
    the prefix for backward coherence to compare with; the switch itself is what jumps."""
    if start < 1:
        return np.zeros(len(candidates))
    seg = candidates[:, start - 1:start + ticks]
    if seg.shape[1] < 2:
        return np.zeros(len(candidates))
    return -discounted_mean((np.diff(seg, axis=1) ** 2).mean(axis=2), decay)


def cfn_targets(n: int, dim: int, seed: int = 0) -> np.ndarray:
    """One random +-1 code of `dim` coin flips per training sample."""
    return np.where(np.random.default_rng(seed).random((n, dim)) < 0.5, -1.0, 1.0).astype(np.float32)


class CoinFlipNet(nn.Module):
    def __init__(self, inp: int, dim: int = 20, hidden: int = 128) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inp, hidden), nn.LayerNorm(hidden), nn.Mish(), nn.Linear(hidden, hidden),
                                 nn.Mish(), nn.Linear(hidden, dim))
        self.register_buffer("mean", torch.zeros(inp))
        self.register_buffer("std", torch.ones(inp))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net((x - self.mean) / self.std)

    @torch.no_grad()
    def scores(self, x: np.ndarray) -> np.ndarray:
        """-||f(x)||^2: higher = more familiar (a pseudo-count proxy)."""
        return -(self(torch.from_numpy(np.asarray(x, np.float32))) ** 2).sum(-1).numpy()


def chunk_features(state: np.ndarray, chunks: np.ndarray, length: int) -> np.ndarray:
    """[N, D + length * A]: the state beside each chunk's first `length` actions."""
    state = np.broadcast_to(np.asarray(state, np.float32), (len(chunks), np.asarray(state).shape[-1]))
    return np.concatenate([state, chunks[:, :length].reshape(len(chunks), -1)], 1).astype(np.float32)


def fit_cfn(features: np.ndarray, dim: int = 20, steps: int = 2000, batch: int = 256, seed: int = 0
            ) -> CoinFlipNet:
    """Fit the CFN on successful (state, chunk) features."""
    x = torch.from_numpy(np.asarray(features, np.float32))
    y = torch.from_numpy(cfn_targets(len(x), dim, seed))
    torch.manual_seed(seed)
    net = CoinFlipNet(x.shape[1], dim)
    net.mean.copy_(x.mean(0))
    net.std.copy_(x.std(0).clamp_min(1e-6))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        idx = torch.randint(len(x), (min(batch, len(x)),), generator=gen)
        loss = ((net(x[idx]) - y[idx]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net.eval()


def store_features(store: str | Path, length: int) -> np.ndarray:
    """(state, next `length` actions) of every step of the store's successful episodes that has them."""
    from vla.data.store import EpisodeStore

    with EpisodeStore.open(store) as s:
        table = s.table()
        rows = []
        for e in np.flatnonzero(table.success):
            a, b = s.episode_bounds(int(e))
            state, action = s.read("state", a, b), s.read("action", a, b)
            for t in range(b - a - length + 1):
                rows.append(np.concatenate([state[t], action[t:t + length].reshape(-1)]))
    if not rows:
        raise ValueError(f"{store}: no successful episode to fit the CFN on")
    return np.asarray(rows, np.float32)


def save_cfn(net: CoinFlipNet, folder: str | Path, length: int) -> Path:
    from safetensors.torch import save_file

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in net.state_dict().items()}, str(out / "cfn.safetensors"))
    inp, dim = net.net[0].in_features, net.net[-1].out_features
    (out / "cfn.json").write_text(json.dumps({"inputs": inp, "dim": dim, "length": length}))
    return out


def load_cfn(folder: str | Path) -> tuple[CoinFlipNet, int]:
    from safetensors.torch import load_file

    p = Path(folder)
    if not (p / "cfn.json").is_file():
        raise FileNotFoundError(f"{p}: no CFN (cfn.json + cfn.safetensors); fit one with real.selection.fit_cfn")
    meta = json.loads((p / "cfn.json").read_text())
    net = CoinFlipNet(int(meta["inputs"]), int(meta["dim"]))
    net.load_state_dict(load_file(str(p / "cfn.safetensors")))
    return net.eval(), int(meta["length"])


def standardise(x: np.ndarray) -> np.ndarray:
    return (x - x.mean()) / (x.std() + 1e-8)


class ChunkSelection:
    """A Policy that samples `n` chunks of `policy` per call and returns the best by `by`."""

    def __init__(self, policy: Any, n: int = 8, by: str = "coherence", cfn: CoinFlipNet | None = None,
                 cfn_length: int = 8, executed: int = 8, decay: float = 1.0) -> None:
        if n < 1 or by not in BY:
            raise ValueError(f"select: n must be >= 1 and by one of {BY}, got {n}, '{by}'")
        if by in ("cfn", "both") and cfn is None:
            raise ValueError(f"select: by={by} needs cfn=DIR (a fitted coin-flipping network)")
        self.policy, self.n, self.by, self.cfn, self.cfn_length = policy, n, by, cfn, cfn_length
        self.executed = executed  # actions of a chunk run before the next call when no prefix says so
        if not 0 < decay <= 1:
            raise ValueError(f"select: decay must be in (0, 1], got {decay}")
        self.decay = decay
        self.cfg = getattr(policy, "cfg", None)
        check_sampling_noise(policy, n, "select")
        self.previous: np.ndarray | None = None
        self.last_scores: np.ndarray | None = None

    def reset(self, seed: int | None = None) -> None:
        self.policy.reset(seed)
        self.previous = None

    def sample_chunk(self, obs_batch: Sequence[Any], prefix: np.ndarray | None = None, guidance: Any = None
                     ) -> np.ndarray:
        if len(obs_batch) != 1:
            raise ValueError(f"select: one observation at a time (the executor's), got {len(obs_batch)}")
        rep_prefix = None if prefix is None else np.repeat(np.asarray(prefix, np.float32), self.n, 0)
        cands = np.asarray(self.policy.sample_chunk(list(obs_batch) * self.n, prefix=rep_prefix, guidance=guidance),
                           np.float32)
        parts = []
        p = 0 if prefix is None else np.asarray(prefix).shape[1]
        if self.by in ("coherence", "both"):
            tail, start = np.zeros((0, cands.shape[2]), np.float32), p
            if self.previous is not None:
                # with a prefix (the executor's committed actions, copied from the previous chunk): the
                # previous plan after it; without (sim evaluation): what follows its executed actions
                e = previous_offset(np.asarray(prefix)[0], self.previous) if p else None
                tail = self.previous[e + p:] if e is not None else self.previous[self.executed:]
            parts.append(coherence_scores(cands, tail, start, self.decay))
        if self.by == "smooth":
            parts.append(smoothness_scores(cands, p, decay=self.decay))
        if self.by in ("cfn", "both"):
            assert self.cfn is not None
            parts.append(self.cfn.scores(chunk_features(obs_batch[0]["state"], cands, self.cfn_length)))
        scores = parts[0] if len(parts) == 1 else sum(standardise(s) for s in parts)
        self.last_scores = scores
        best = cands[int(np.argmax(scores))][None]
        self.previous = best[0]
        return best


SPEC_KEYS = ("ckpt", "n", "by", "cfn", "executed", "decay")


@POLICY_SPECS.register("select")
def make_selection(args: str, env: Any = None, seed: int = 0, load: Callable[[str], Any] | None = None
                   ) -> ChunkSelection:
    a = spec_args("select", args, SPEC_KEYS, ("ckpt",), "select:ckpt=P,n=8,by=coherence|cfn|both,cfn=DIR")
    load = spec_loader(load, seed)
    cfn, length = (load_cfn(a["cfn"]) if "cfn" in a else (None, 8))
    return ChunkSelection(load(a["ckpt"]), n=int(a.get("n", 8)), by=a.get("by", "coherence"), cfn=cfn,
                          cfn_length=length, executed=int(a.get("executed", 8)), decay=float(a.get("decay", 1.0)))
