"""Per-step input features for the refinement critics (HABC's two heads, AWR's value).

`state`: the store's state vector (proprio, plus object poses in the state observation mode).
`encoder`: with cameras the state alone does not show the scene, so the frozen policy's trunk
tokens for the step's observation window are averaged over their valid positions and
concatenated with the state. The critics never back-propagate into the policy.
"""

from __future__ import annotations

import numpy as np
import torch

from vla.data.dataset import WindowDataset
from vla.data.store import EpisodeStore


def state_features(store: EpisodeStore) -> torch.Tensor:
    return torch.from_numpy(np.asarray(store.read("state", 0, store.n_steps), np.float32))


@torch.no_grad()
def encoder_features(store: EpisodeStore, model: torch.nn.Module, batch_size: int = 256) -> torch.Tensor:
    """[n_steps, d_model + state_dim]; every step of the store (windows over all episodes)."""
    cfg = model.cfg  # type: ignore[attr-defined]
    windows = WindowDataset(store, obs_horizon=cfg.n_obs_steps, action_horizon=1, cameras=cfg.cameras)
    state = state_features(store)
    out = torch.zeros(store.n_steps, cfg.d_model + state.shape[1])
    device = next(model.parameters()).device
    model.eval()
    for lo in range(0, len(windows), batch_size):
        idx = np.arange(lo, min(lo + batch_size, len(windows)))
        batch = windows.get_batch(idx)
        b, to = batch["state"].shape[:2]
        images = model.stack_images({k: v.to(device) for k, v in batch["images"].items()}, b, to)  # type: ignore[operator]
        tokens, mask = model.encode(images, batch["state"].to(device).float(),  # type: ignore[operator]
                                    batch["obs_mask"].to(device).bool(),
                                    model.language_embedding(batch["instruction"]))  # type: ignore[operator]
        m = mask.float()[..., None]
        pooled = (tokens.float() * m).sum(1) / m.sum(1).clamp_min(1.0)
        steps = torch.from_numpy(windows.index.step[idx])
        out[steps] = torch.cat([pooled.cpu(), state[steps]], dim=1)
    return out


def step_features(kind: str, store: EpisodeStore, model: torch.nn.Module | None = None) -> torch.Tensor:
    if kind == "state":
        return state_features(store)
    if kind == "encoder":
        if model is None:
            raise ValueError("encoder features need the policy model")
        return encoder_features(store, model)
    raise ValueError(f"unknown critic features '{kind}' (valid: state, encoder)")
