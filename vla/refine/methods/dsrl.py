"""`dsrl`: DSRL (Wagenmaker et al., arXiv 2506.15799; the agent in vla/refine/dsrl.py) in the
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
from vla.refine.method import Collection, MethodArgs, RefineMethod, Rollouts, Run
from vla.registry import REFINE_METHODS


@dataclass
class DsrlArgs(DSRLConfig, MethodArgs):
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


@REFINE_METHODS.register("dsrl")
class Dsrl(RefineMethod):
    Args = DsrlArgs
    args: DsrlArgs
    intervener = ""  # DSRL learns from outcomes only: no intervener

    def check(self) -> None:
        if self.run_cfg.intervener:
            raise ValueError(f"dsrl learns from the episodes' outcomes alone: intervener={self.run_cfg.intervener!r} "
                             "is not supported (leave it unset or '')")

    def actor_file(self, run: Run, version: int) -> Path:
        return run.out / f"iter_{version:02d}" / "dsrl" / "actor.safetensors"

    def decisions_dir(self, run: Run, version: int) -> Path:
        return run.out / f"iter_{version:02d}" / "dsrl" / "decisions"

    def version_policy(self, run: Run, version: int) -> str:
        if version == 0:
            return str(run.policy_path(0))
        if not self.trained(run, version):
            raise FileNotFoundError(f"dsrl version {version} is not trained yet ({self.actor_file(run, version)})")
        return f"dsrl:ckpt={run.policy_path(0)},actor={self.actor_file(run, version)},mode=mean"

    def trained(self, run: Run, version: int) -> bool:
        return version == 0 or self.actor_file(run, version).exists()

    def collection(self, run: Run, version: int) -> Collection:
        log = self.decisions_dir(run, version)
        if version == 0:
            return Collection(policy=f"dsrl:ckpt={run.policy_path(0)},mode=base,steer={self.args.steer},log={log}",
                              intervener=self.intervener)
        return Collection(policy=f"dsrl:ckpt={run.policy_path(0)},actor={self.actor_file(run, version)},mode=sample,"
                                 f"log={log}", intervener=self.intervener)

    def augment(self, run: Run, rollouts: Rollouts) -> None:
        missing = sorted(set(run.collect_seeds(rollouts.version)) - {s for s, *_ in read_decisions(
            self.decisions_dir(run, rollouts.version))})
        if missing:  # collected before this run logged decisions (or by another method): not learnable
            raise RuntimeError(f"dsrl: no decision log for the collected seeds {missing[:5]} in "
                               f"{self.decisions_dir(run, rollouts.version)}; move {run.out} aside and start again")
        return None

    def train(self, run: Run, version: int) -> dict[str, Any]:
        """Version k + 1 is an actor trained from the decisions of rounds 0..k (a fresh agent; see the
        module's docstring for why), not a fine-tune."""
        import torch

        from vla.policy.checkpoint import load_config
        from vla.refine.dsrl import DSRLAgent, Replay

        c = self.args.agent_config()
        rounds = [read_decisions(self.decisions_dir(run, k)) for k in range(version + 1)]
        if not rounds[0]:
            raise RuntimeError(f"dsrl: round 0 logged no decisions in {self.decisions_dir(run, 0)}")
        pcfg = load_config(run.policy_path(0))  # the dims only: no weights
        noise_dim = steer_width(pcfg, self.args.steer)
        first = np.concatenate([f for _, f, _, _ in rounds[0]])
        seed = int(self.run_cfg.seed) * 1000 + version
        agent = DSRLAgent(first.shape[1], noise_dim, c, first.mean(0), first.std(0), seed=seed)
        replay = Replay(first.shape[1], noise_dim, c.gamma)
        for eps in rounds:
            for s, feats, w, ok in eps:
                try:
                    replay.add_episode(feats, w, ok)
                except ValueError as e:  # e.g. decisions logged under another steer= than this run's
                    raise ValueError(f"dsrl: seed {s}'s decision log (steer={self.args.steer}): {e}") from None
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
                **{f"final_{k}": float(v) for k, v in stats.items()}, "config": json.dumps(asdict(self.args))}


__all__ = ["Dsrl", "DsrlArgs", "read_decisions"]
