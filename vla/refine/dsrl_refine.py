"""`vla refine dsrl`: DSRL (Wagenmaker et al., arXiv 2506.15799; the agent in vla/refine/dsrl.py) in the
refinement loop: the policy's weights stay frozen and each version is the base steered through its
initial noise by an actor learnt from the episodes' sparse outcomes alone (no intervener, no person).

Per iteration k of the loop (vla/refine/loop.py):
1. version k is evaluated: version 0 is the base as it samples; version k >= 1 is
   `dsrl:ckpt=BASE,actor=iter_k/dsrl/actor.safetensors,mode=mean` (the actor's mean noise);
2. version k collects `episodes_per_iteration` rollouts in the evaluation workers: version 0 with the
   base's own N(0, I) noise (the paper's initial rollouts), later versions with the actor's sampled
   noise; every episode's decisions (the state at each chunk query and the noise used) and its outcome
   go to `iter_k/dsrl/decisions/SEED.npz` (the steered policy's `log=`), the rollouts to the store;
3. version k + 1's actor is trained on the decisions of every round so far: a fresh agent (seeded by
   run seed and version) with the features' statistics of round 0, `utd` x decisions SAC updates.
Where ours differs from the paper and from the online benchmark (benchmarks/bench_dsrl.py, which
updates after every episode): the loop's rounds make it a batched variant, and each round retrains the
agent from scratch on all decisions (Monte-Carlo targets, the default, are fixed regression targets, so
nothing is lost by not carrying the critics over; TD targets would lose their bootstrapped progress).
State-mode features only (the observation's state vector), as in the steered policy. The decision logs
are written by the workers themselves: with `backend=ray` across machines the run folder must be on a
filesystem every node shares.

method_args: DSRLConfig's fields (hidden, utd, targets, ...) plus `steer`: "shared" (one noise vector
of the action's dimension for the whole chunk, the default) or "full" (one per chunk step).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from vla.refine.dsrl import DSRLConfig
from vla.refine.dsrl_policy import STEER, steer_width
from vla.registry import REFINE_METHODS


@dataclass
class DsrlRefineConfig(DSRLConfig):
    steer: str = "shared"

    def validate(self) -> None:
        super().validate()
        if self.steer not in STEER:
            raise ValueError(f"method_args.steer must be one of {STEER}, got {self.steer!r}")

    def agent_config(self) -> DSRLConfig:
        return DSRLConfig(**{f.name: getattr(self, f.name) for f in fields(DSRLConfig)})


def read_decisions(folder: Path) -> list[tuple[int, np.ndarray, np.ndarray, bool]]:
    """(seed, features [n, D], noise [n, N], success) of every episode logged in `folder`, by seed;
    a file that is not a decision log is a one-line error naming it."""
    out = []
    for f in sorted(folder.glob("*.npz"), key=lambda p: int(p.stem)) if folder.exists() else []:
        with np.load(f, allow_pickle=False) as z:
            if not {"features", "noise", "success"} <= set(z.files):
                raise ValueError(f"{f}: not a DSRL decision log (has {sorted(z.files)})")
            out.append((int(f.stem), z["features"], z["noise"], bool(z["success"])))
    return out


class DsrlMethod:
    collection_mode = ""  # DSRL learns from outcomes only: no intervener

    def __init__(self, cfg: Any) -> None:
        from vla.config import from_dict

        self.run_cfg = cfg
        self.cfg = from_dict(DsrlRefineConfig, dict(cfg.method_args), "method_args")
        self.cfg.validate()
        if cfg.intervener:
            raise ValueError(f"dsrl learns from the episodes' outcomes alone: intervener={cfg.intervener!r} "
                             "is not supported (leave it unset or '')")

    def actor_file(self, run: Any, version: int) -> Path:
        return run.out / f"iter_{version:02d}" / "dsrl" / "actor.safetensors"

    def decisions_dir(self, run: Any, version: int) -> Path:
        return run.out / f"iter_{version:02d}" / "dsrl" / "decisions"

    def version_policy(self, run: Any, version: int) -> str:
        if version == 0:
            return str(run.policy_path(0))
        if not self.trained(run, version):
            raise FileNotFoundError(f"dsrl version {version} is not trained yet ({self.actor_file(run, version)})")
        return f"dsrl:ckpt={run.policy_path(0)},actor={self.actor_file(run, version)},mode=mean"

    def trained(self, run: Any, version: int) -> bool:
        return version == 0 or self.actor_file(run, version).exists()

    def collect_policy(self, run: Any, version: int, policy: str) -> tuple[str, str]:
        log = self.decisions_dir(run, version)
        if version == 0:
            return f"dsrl:ckpt={run.policy_path(0)},mode=base,steer={self.cfg.steer},log={log}", "rollout"
        return f"dsrl:ckpt={run.policy_path(0)},actor={self.actor_file(run, version)},mode=sample,log={log}", \
            "rollout"

    def after_collect(self, run: Any, version: int) -> None:
        missing = sorted(set(run.collect_seeds(version)) - {s for s, *_ in read_decisions(
            self.decisions_dir(run, version))})
        if missing:  # collected before this run logged decisions (or by another method): not learnable
            raise RuntimeError(f"dsrl: no decision log for the collected seeds {missing[:5]} in "
                               f"{self.decisions_dir(run, version)}; move {run.out} aside and start again")

    def step_weights(self, run: Any, version: int, model: Any) -> tuple[Any, dict[str, float]]:
        raise RuntimeError("dsrl trains an actor over the noise (train_version), not weights over the store")

    def train_version(self, run: Any, version: int) -> dict[str, float]:
        """Version k + 1's actor from the decisions of rounds 0..k (a fresh agent; see the module's
        docstring for why)."""
        import torch

        from vla.policy.checkpoint import load_config
        from vla.refine.dsrl import DSRLAgent, Replay

        c = self.cfg.agent_config()
        rounds = [read_decisions(self.decisions_dir(run, k)) for k in range(version + 1)]
        if not rounds[0]:
            raise RuntimeError(f"dsrl: round 0 logged no decisions in {self.decisions_dir(run, 0)}")
        pcfg = load_config(run.policy_path(0))  # the dims only: no weights
        noise_dim = steer_width(pcfg, self.cfg.steer)
        first = np.concatenate([f for _, f, _, _ in rounds[0]])
        seed = int(self.run_cfg.seed) * 1000 + version
        agent = DSRLAgent(first.shape[1], noise_dim, c, first.mean(0), first.std(0), seed=seed)
        replay = Replay(first.shape[1], noise_dim, c.gamma)
        for eps in rounds:
            for s, feats, w, ok in eps:
                try:
                    replay.add_episode(feats, w, ok)
                except ValueError as e:  # e.g. decisions logged under another steer= than this run's
                    raise ValueError(f"dsrl: seed {s}'s decision log (steer={self.cfg.steer}): {e}") from None
        rng = np.random.default_rng(seed)
        n_updates = c.utd * len(replay)
        stats: dict[str, float] = {}
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            for _ in range(n_updates):
                stats = agent.update(replay.sample(c.batch_size, rng))
        agent.save(self.actor_file(run, version + 1))
        outcomes = [ok for eps in rounds for _, _, _, ok in eps]
        return {"decisions": float(len(replay)), "episodes": float(len(outcomes)),
                "collected_success": float(np.mean(outcomes)), "updates": float(n_updates),
                **{f"final_{k}": float(v) for k, v in stats.items()}, "config": json.dumps(asdict(self.cfg))}


@REFINE_METHODS.register("dsrl")
def make_dsrl(cfg: Any) -> DsrlMethod:
    return DsrlMethod(cfg)


__all__ = ["DsrlMethod", "DsrlRefineConfig", "read_decisions"]
