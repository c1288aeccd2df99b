"""Test-time chunk selection through the world model (no training): sample K chunks for the
current observation, imagine each briefly, execute the best.

Each of the K candidate chunks is stepped in the imagined environment from the real observation;
with `chunks` > 1 a state policy continues in imagination for the remaining chunks (so a chunk is
judged by where it leads, not only by its first step). Candidates are scored as imagination
refinement scores its rollouts (`imagination_math.rollout_scores`: predicted success, value
bootstrap, disagreement penalty). A cheap first use of the model and the baseline that imagination
refinement must beat. Spec for `vla eval`: `wm-select:ckpt=POLICY,wm=WORLDMODEL,k=8,chunks=2`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vla.policy.config import check_sampling_noise
from vla.policy.specs import spec_args, spec_loader
from vla.registry import POLICY_SPECS
from worldmodel.data import observation_arrays
from worldmodel.imagination_math import best_of, rollout_scores
from worldmodel.imagined_env import ImaginedEnv, StartStates, check_policy
from worldmodel.model import WorldModel


class WorldModelSelection:
    """A Policy (`sample_chunk`, `reset`) that picks the best of K chunks of `policy` by imagination."""

    def __init__(self, policy: Any, model: WorldModel, k: int = 8, chunks: int = 1, value_weight: float = 0.5,
                 disagreement_penalty: float = 1.0) -> None:
        if k < 1 or chunks < 1:
            raise ValueError(f"k and chunks must be >= 1, got {k}, {chunks}")
        if chunks > 1:
            check_policy(policy, model)  # it must act on imagined (state-only) observations
        self.policy, self.model, self.k, self.chunks = policy, model, k, chunks
        self.value_weight, self.disagreement_penalty = value_weight, disagreement_penalty
        self.cfg = getattr(policy, "cfg", None)
        check_sampling_noise(policy, k, "wm-select")
        self.last_scores: np.ndarray | None = None

    def reset(self, seed: int | None = None) -> None:
        self.policy.reset(seed)

    def sample_chunk(self, obs_batch: Sequence[Any], prefix: np.ndarray | None = None, guidance: Any = None
                     ) -> np.ndarray:
        b, k, c = len(obs_batch), self.k, self.model.cfg.chunk
        rep = [o for o in obs_batch for _ in range(k)]
        rep_prefix = None if prefix is None else np.repeat(np.asarray(prefix), k, axis=0)
        cands = np.asarray(self.policy.sample_chunk(rep, prefix=rep_prefix), np.float32)
        env = ImaginedEnv(self.model, success_threshold=1.1, max_chunks=self.chunks)
        obs, _ = env.reset(live_starts(self.model, rep))
        probs, dis = [], []
        for j in range(self.chunks):
            chunk = cands[:, :c] if j == 0 else np.asarray(self.policy.sample_chunk(obs), np.float32)[:, :c]
            obs, p, _, _, info = env.step(chunk)
            probs.append(p)
            dis.append(info["disagreement"])
        scores = rollout_scores(np.stack(probs, 1), info["value"], np.stack(dis, 1), value_weight=self.value_weight,
                                disagreement_penalty=self.disagreement_penalty)
        self.last_scores = scores.reshape(b, k)
        best = best_of(scores, b)
        return cands.reshape(b, k, *cands.shape[1:])[np.arange(b), best]


def live_starts(model: WorldModel, obs_batch: Sequence[dict[str, Any]]) -> StartStates:
    """Imagination's starts from live observations (no recorded episode behind them)."""
    state, images = observation_arrays(model.cfg, obs_batch)
    n = len(obs_batch)
    return StartStates(state, images, [o["instruction"] for o in obs_batch], np.zeros(n, np.int64),
                       np.zeros(n, np.int64), np.zeros(n, bool))


def score_chunks(model: WorldModel, obs_batch: Sequence[dict[str, Any]], chunks: np.ndarray, value_weight: float = 0.5,
                 disagreement_penalty: float = 1.0) -> np.ndarray:
    """Scores [B * K] of K given chunks per observation ([B, K, H, A]), each imagined one chunk from the real
    observation and scored as selection scores its candidates (worldmodel/chunk_truth.py's ground truth
    compares them with the simulator's)."""
    chunks = np.asarray(chunks, np.float32)
    b, k = chunks.shape[:2]
    env = ImaginedEnv(model, success_threshold=1.1, max_chunks=1)
    env.reset(live_starts(model, [o for o in obs_batch for _ in range(k)]))
    _, p, _, _, info = env.step(chunks.reshape(b * k, *chunks.shape[2:])[:, :model.cfg.chunk])
    return rollout_scores(p[:, None], info["value"], info["disagreement"][:, None], value_weight=value_weight,
                          disagreement_penalty=disagreement_penalty)


def parse_spec(args: str) -> dict[str, str]:
    return spec_args("wm-select", args, ("ckpt", "wm", "k", "chunks", "value_weight", "disagreement_penalty"),
                     ("ckpt", "wm"), "wm-select:ckpt=P,wm=W,k=8,chunks=2")


@POLICY_SPECS.register("wm-select")
def make_selection(args: str, env: Any = None, seed: int = 0, load: Callable[[str], Any] | None = None
                   ) -> WorldModelSelection:
    from worldmodel.checkpoint import load_checkpoint

    a = parse_spec(args)
    load = spec_loader(load, seed)
    model = load_checkpoint(a["wm"])[0]
    return WorldModelSelection(load(a["ckpt"]), model, k=int(a.get("k", 8)), chunks=int(a.get("chunks", 1)),
                               value_weight=float(a.get("value_weight", 0.5)),
                               disagreement_penalty=float(a.get("disagreement_penalty", 1.0)))
