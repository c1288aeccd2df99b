"""A flow policy steered through its initial noise by a DSRL actor (vla/refine/dsrl.py), and the
evaluator's "dsrl:ckpt=P,actor=A[,mode=mean|sample|base|zero][,log=DIR][,steer=shared|full]" policy spec:
`vla eval "dsrl:ckpt=...,actor=..."`. With `log=DIR` every finished episode's decisions (the features
and the noise of each chunk query) and its outcome go to DIR/SEED.npz: the learner's data when the
refinement loop (`vla refine dsrl`, vla/refine/methods/dsrl.py) collects in evaluation workers.

The actor sees the observation's proprio/state vector (state-mode policies; a camera policy's
encoder features are not wired in yet) and returns the noise x0 the policy integrates from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vla.interfaces import GuidanceFn, Observation
from vla.policy.specs import spec_args, spec_loader
from vla.refine.dsrl import DSRLAgent, load_actor
from vla.registry import POLICY_SPECS

MODES = ("mean", "sample", "base", "zero")
STEER = ("shared", "full")  # one noise vector for the whole chunk, or one per step


def steer_width(cfg: Any, steer: str) -> int:
    """The actor's noise width under `steer`: one action-sized vector for the whole chunk (shared), or one
    per step of the chunk (full)."""
    return int(cfg.action_dim) * (1 if steer == "shared" else int(cfg.chunk_size))


def state_features(obs: Observation) -> np.ndarray:
    """The actor's input: the observation's state vector, flattened."""
    return np.asarray(obs["state"], np.float32).reshape(-1)


class SteeredPolicy:
    """`sample_chunk` runs the base policy from the noise the actor picks. Modes: mean (the actor's
    deterministic noise; evaluation), sample (its stochastic noise; collection), base (the base's own
    N(0, I) draw, clipped to the actor's range: DSRL's initial rollouts), zero (x0 = 0, the base's
    mean-noise control). Every query's (features, noise) is kept in `decisions` for the learner."""

    def __init__(self, base: Any, agent: DSRLAgent | None, mode: str = "mean",
                 features: Callable[[Observation], np.ndarray] = state_features, steer_dim: int | None = None,
                 seeded: bool = True, log_dir: str | Path | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"SteeredPolicy: mode must be one of {MODES}, got {mode!r}")
        if agent is None and mode in ("mean", "sample"):
            raise ValueError(f"SteeredPolicy: mode {mode!r} needs an actor")
        cfg = base.cfg
        self.noise_shape = (int(cfg.chunk_size), int(cfg.action_dim))
        # an actor over A dimensions steers every step of the chunk with the same noise vector (x0 = 0, the
        # base's mean noise, is such a point); one over H x A steers each step's noise
        full = self.noise_shape[0] * self.noise_shape[1]
        self.steer_dim = agent.noise_dim if agent is not None else steer_dim or full
        if self.steer_dim not in (self.noise_shape[1], full):
            raise ValueError(f"dsrl actor: noise_dim {self.steer_dim} matches neither the policy's chunk "
                             f"{self.noise_shape[0]} x {self.noise_shape[1]} nor its action dimension")
        # the steered noise replaces the policy's own distribution: scale 0 would ignore it
        cfg.with_noise_scale(1.0)
        self.base, self.agent, self.mode, self.features = base, agent, mode, features
        self.cfg = cfg
        self.magnitude = agent.cfg.magnitude if agent is not None else 1.5
        self.decisions: list[tuple[np.ndarray, np.ndarray]] = []
        # seeded: sample mode draws from a stream restarted at every reset(seed), so an episode does not
        # depend on which worker ran it or what ran before (the evaluator's rule); unseeded: the agent's
        # own stream (the online learner's collection)
        self.gen = torch.Generator().manual_seed(0) if seeded else None
        self.log_dir = Path(log_dir) if log_dir else None

    def reset(self, seed: int | None = None) -> None:
        self.base.reset(seed)
        if self.gen is not None and seed is not None:
            self.gen.manual_seed(int(seed))
        self.decisions = []

    def noise_for(self, feats: np.ndarray) -> np.ndarray:
        """[B, steer_dim] noise for [B, D] features in the current mode."""
        b, n = len(feats), self.steer_dim
        if self.mode == "zero":
            return np.zeros((b, n), np.float32)
        if self.mode == "base":
            return np.clip(self.base.rng.standard_normal((b, n)), -self.magnitude, self.magnitude).astype(np.float32)
        assert self.agent is not None
        return self.agent.act(feats, deterministic=self.mode == "mean", generator=self.gen)

    def sample_chunk(self, obs_batch: Sequence[Observation], prefix: np.ndarray | None = None,
                     guidance: GuidanceFn | None = None) -> np.ndarray:
        feats = np.stack([self.features(o) for o in obs_batch])
        w = self.noise_for(feats)
        for f, x in zip(feats, w, strict=True):
            self.decisions.append((f, x))
        h, a = self.noise_shape
        x0 = w.reshape(len(obs_batch), 1, a).repeat(h, 1) if self.steer_dim == a else w.reshape(len(obs_batch), h, a)
        return self.base.sample_chunk(obs_batch, prefix=prefix, guidance=guidance, noise=x0)

    def episode_done(self, seed: int, success: bool) -> None:
        """The evaluation worker's end-of-episode call: with a log folder, the episode's decisions and
        outcome go to LOG/SEED.npz (plain arrays, read back without pickle); written to a temporary
        name first, so that a file there is always whole."""
        feats, w = self.take_decisions()
        if self.log_dir is None:
            return
        self.log_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.log_dir / f".{int(seed)}.tmp.npz"
        np.savez(tmp, features=feats, noise=w, success=np.asarray(bool(success)))
        tmp.rename(self.log_dir / f"{int(seed)}.npz")

    def take_decisions(self) -> tuple[np.ndarray, np.ndarray]:
        """(features [n, D], noise [n, steer_dim]) of the queries since the last reset or take."""
        if not self.decisions:
            return np.zeros((0, 0), np.float32), np.zeros((0, 0), np.float32)
        feats, w = (np.stack(x) for x in zip(*self.decisions, strict=True))
        self.decisions = []
        return feats, w


@POLICY_SPECS.register("dsrl")
def make_steered(args: str, env: Any = None, seed: int = 0, load: Callable[[str], Any] | None = None
                 ) -> SteeredPolicy:
    a = spec_args("dsrl", args, ("ckpt", "actor", "mode", "log", "steer"), ("ckpt",),
                  "dsrl:ckpt=P,actor=A,mode=mean")
    mode, steer = a.get("mode", "mean"), a.get("steer", "full")
    if mode not in MODES:
        raise ValueError(f"dsrl: mode must be one of {', '.join(MODES)}, got {mode!r}")
    if steer not in STEER:
        raise ValueError(f"dsrl: steer must be one of {', '.join(STEER)}, got {steer!r}")
    agent = load_actor(a["actor"]) if "actor" in a else None
    base = spec_loader(load, seed)(a["ckpt"])
    # without an actor (modes base and zero) `steer` sets the noise's width; an actor brings its own
    return SteeredPolicy(base, agent, mode=mode, log_dir=a.get("log"), steer_dim=steer_width(base.cfg, steer))
