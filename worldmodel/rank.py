"""`vla wm rank`: rank policy checkpoints by imagined success, without the simulator.

Every candidate starts from the same real recorded states (K sampled chunk sequences per start),
rolls out in the imagined environment, and is scored by its imagined success rate. Against the
real success of the same checkpoints (from >= 50 simulator episodes) we report Spearman, Pearson,
MMRV and pairwise accuracy with bootstrap intervals (worldmodel.metrics), next to two cheap
baselines that need no world-model rollouts: the policy's validation BC loss on held-out demos
(lower = better), and the world model's success head applied along logged real rollouts of each
checkpoint (needs the simulator's rollouts, so it is an upper reference, not a replacement).
WorldGym (arXiv 2506.00613) reports Pearson 0.78 between imagined and real success with a video
model; SimplerEnv (arXiv 2405.05941) defines MMRV.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from worldmodel.data import load_episodes
from worldmodel.evaluate import one_step_success
from worldmodel.imagined_env import ImaginedEnv, StartStates, rollout
from worldmodel.metrics import rank_report
from worldmodel.model import WorldModel


def load_candidate(path: str | Path, seed: int = 0, noise_scale: float | None = None) -> Any:
    """A checkpoint as a torch policy; `noise_scale` overrides its own (None keeps it)."""
    from vla.policy.policy import load_torch_policy

    return load_torch_policy(path, seed=seed, noise_scale=noise_scale)


def imagined_score(model: WorldModel, policy: Any, starts: StartStates, samples: int, n_chunks: int,
                   seed: int = 0, max_disagreement: float = float("inf"), fps: float = 20.0) -> dict[str, Any]:
    env = ImaginedEnv(model, max_disagreement=max_disagreement, max_chunks=n_chunks, fps=fps)
    t = time.time()
    r = rollout(env, policy, starts.repeat(samples), n_chunks, seed=seed)
    seconds = time.time() - t
    steps = int(r["success_prob"].shape[1]) * model.cfg.chunk * len(starts) * samples
    return {"imagined_success": float(r["success"].mean()), "soft_success": float(r["success_prob"].max(1).mean()),
            "disagreement": float(r["disagreement"].mean()), "seconds": seconds, "imagined_steps": steps,
            "imagined_steps_per_s": steps / max(seconds, 1e-9), "per_start": r["success"].reshape(len(starts), samples)
            .mean(1).tolist()}


@torch.no_grad()
def bc_val_loss(policy: Any, store: str | Path, batches: int = 8, batch_size: int = 64, seed: int = 0) -> float:
    """The policy's flow-matching loss on a store's windows with fixed noise (comparable across policies)."""
    from torch.utils.data import DataLoader

    from vla.data.dataset import WindowDataset

    cfg = policy.model.cfg
    ds = WindowDataset(str(store), obs_horizon=cfg.n_obs_steps, action_horizon=cfg.chunk_size, cameras=cfg.cameras)
    loader = DataLoader(ds, batch_size=batch_size, shuffle=False)
    gen = torch.Generator().manual_seed(seed)
    total, n = 0.0, 0
    for i, batch in enumerate(loader):
        if i >= batches:
            break
        loss, _ = policy.model.compute_loss(batch, gen)
        total, n = total + float(loss), n + 1
    return total / max(n, 1)


def logged_success_head(model: WorldModel, store: str | Path) -> float:
    """Mean over a store's episodes of the success head's maximum along the real trajectory (one
    chunk ahead of every chunk-aligned real state)."""
    data = load_episodes([store], model.cfg)
    return float(np.mean([one_step_success(model, data, e)[0].max() for e in range(len(data))]))


def rank(model: WorldModel, candidates: dict[str, dict[str, Any]], starts: StartStates, samples: int = 4,
         n_chunks: int = 25, val_store: str | Path | None = None, seed: int = 0, fps: float = 20.0,
         max_disagreement: float = float("inf"), progress: bool = True) -> dict[str, Any]:
    """candidates: name -> {"ckpt": path, "real_success": float | None, "heldout": store of logged real
    rollouts (optional)}. Returns per-candidate scores and, when real success is known for all,
    the ranking metrics of every proxy."""
    from vla.progress import progress as tqdm

    rows: dict[str, dict[str, Any]] = {}
    for name, c in tqdm(candidates.items(), desc="ranking", disable=not progress):
        policy = load_candidate(c["ckpt"], seed=seed)
        row = {"ckpt": str(c["ckpt"]), "real_success": c.get("real_success"),
               **imagined_score(model, policy, starts, samples, n_chunks, seed, max_disagreement, fps)}
        if val_store is not None:
            row["bc_val_loss"] = bc_val_loss(policy, val_store)
        if c.get("heldout"):
            row["logged_success_head"] = logged_success_head(model, c["heldout"])
        rows[name] = row
    out: dict[str, Any] = {"candidates": rows, "starts": len(starts), "samples": samples, "n_chunks": n_chunks}
    real = [r["real_success"] for r in rows.values()]
    if len(rows) >= 3 and all(v is not None for v in real):
        y = np.asarray(real, np.float64)
        proxies = {"imagined_success": [r["imagined_success"] for r in rows.values()],
                   "soft_success": [r["soft_success"] for r in rows.values()]}
        if val_store is not None:
            proxies["neg_bc_val_loss"] = [-r["bc_val_loss"] for r in rows.values()]
        if all("logged_success_head" in r for r in rows.values()):
            proxies["logged_success_head"] = [r["logged_success_head"] for r in rows.values()]
        out["metrics"] = {k: rank_report(np.asarray(v, np.float64), y, seed=seed) for k, v in proxies.items()}
    return out
