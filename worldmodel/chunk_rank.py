"""Training the world model on chunk-level outcomes (issue 63): chunk-truth sets (worldmodel/chunk_truth.py) built
on `collect`-range seeds give, at one real state, K candidate chunks and what each led to in the simulator. The
world model's episodes show one chunk per state, so nothing in them says what another chunk would have done; these
sets do, and two terms use them (`train.rank_truth`, `train.w_rank`, `train.w_rank_value`):

- pairwise: RankNet's logistic loss (`losses.pairwise_rank_loss`) on the value logit after each candidate, per
  ensemble member, over the pairs of one state whose outcomes differ;
- pointwise: the value head after each candidate against its discounted success-to-go (gamma^(steps left)),
  the same target the value head has on episodes.

Ours differs from learning-to-rank as usual: the items are imagined (a candidate's latent is the dynamics' step
from the encoded real state), so the loss moves the dynamics as well as the head, and the labels are single
rollouts (a candidate's outcome with one continuation), noisy where the policy's continuation is.
A set built on `tune` or `report` seeds is refused: those seeds measure the model (vla.protocol).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from worldmodel.chunk_truth import load_truth, values
from worldmodel.data import observation_arrays
from worldmodel.losses import pairwise_rank_loss, value_targets
from worldmodel.model import WorldModel


@dataclass
class ChunkSets:
    """Candidates of every state of the training truth sets, as the model reads them."""

    state: np.ndarray  # float32 [S, D]
    images: np.ndarray | None  # uint8 [S, n_cams, size, size, 3]
    chunks: np.ndarray  # float32 [S, K, chunk, A]: the model's first chunk of each candidate
    success: np.ndarray  # float32 [S, K]: the candidate's outcome (mean over its continuations)
    value: np.ndarray  # float32 [S, K]: discounted success-to-go after the candidate's chunk

    def __len__(self) -> int:
        return len(self.state)


def load_chunk_sets(folders: list[str], model_cfg: Any) -> ChunkSets:
    """The `collect`-range truth sets `folders`, for a model of `model_cfg`; one error line for a missing set, a
    set of another range, another task's state size, or candidates shorter than the model's chunk."""
    parts: list[ChunkSets] = []
    for folder in folders:
        try:
            arrays, meta = load_truth(folder)
        except FileNotFoundError as e:
            raise FileNotFoundError(f"train.rank_truth: {e} (build one with `vla wm chunk-truth CKPT "
                                    "seed_range=collect ...`)") from None
        cfg = meta["config"]
        if cfg["seed_range"] != "collect":
            raise ValueError(f"train.rank_truth: {folder} was built on '{cfg['seed_range']}' seeds; training takes "
                             "only collect-range sets (tune and report seeds measure the model)")
        d = arrays["state"].shape[1]
        if d != model_cfg.state_dim:
            raise ValueError(f"train.rank_truth: {folder} has states of size {d}, the model {model_cfg.state_dim}")
        chunk, execute = model_cfg.chunk, int(cfg["execute"])
        if arrays["chunks"].shape[2] < chunk or execute < chunk:
            raise ValueError(f"train.rank_truth: {folder} executes {execute} actions of each candidate, the model's "
                             f"chunk is {chunk}")
        cams = meta["cameras"]
        obs = [{"state": arrays["state"][i], "images": {c: arrays["images"][i][j] for j, c in enumerate(cams)}}
               for i in range(len(arrays["state"]))]
        state, images = observation_arrays(model_cfg, obs)
        # after the chunk, `execute` steps into each continuation of `steps`: the episodes' value target there
        value = value_targets(execute, arrays["steps"], arrays["success"], model_cfg.gamma).mean(-1)
        parts.append(ChunkSets(state, images, arrays["chunks"][:, :, :chunk].astype(np.float32),
                               values(arrays).astype(np.float32), value.astype(np.float32)))
    return ChunkSets(np.concatenate([p.state for p in parts]),
                     None if parts[0].images is None else np.concatenate([p.images for p in parts]),
                     np.concatenate([p.chunks for p in parts]), np.concatenate([p.success for p in parts]),
                     np.concatenate([p.value for p in parts]))


def sample_states(sets: ChunkSets, n: int, rng: np.random.Generator) -> dict[str, torch.Tensor]:
    idx = rng.integers(0, len(sets), n)
    batch = {"state": torch.from_numpy(sets.state[idx]), "chunks": torch.from_numpy(sets.chunks[idx]),
             "success": torch.from_numpy(sets.success[idx]), "value": torch.from_numpy(sets.value[idx])}
    if sets.images is not None:
        batch["images"] = torch.from_numpy(sets.images[idx])
    return batch


def chunk_rank_loss(model: WorldModel, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(pairwise, pointwise) losses of a batch of S states with K candidates each."""
    s, k = batch["chunks"].shape[:2]
    z = model.encode(batch["state"], batch.get("images"))  # [S, L]
    z = z.unsqueeze(1).expand(s, k, z.shape[-1]).reshape(s * k, -1)
    logits = model.value_logit(model.next(z, batch["chunks"].reshape(s * k, *batch["chunks"].shape[2:])))
    logits = logits.reshape(-1, s, k)  # [E, S, K]
    pairwise = pairwise_rank_loss(logits, batch["success"])
    pointwise = F.binary_cross_entropy_with_logits(logits, batch["value"].expand_as(logits))
    return pairwise, pointwise
