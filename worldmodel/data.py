"""Chunk sequences for the world model from one or more EpisodeStores, every source alike (demos,
rollouts, interventions, recoveries, imagined).

A sample starts at any step t of an episode and holds the observations at t, t+c, ..., t+H*c, the
H action chunks between them and, per chunk, whether the task succeeded during it. Steps past the
end of an episode are masked (the last real action is repeated to fill a chunk). Episodes that
failed or needed a takeover are drawn more often, and so are windows that contain the success
step: the success head's positives are rare (one step per successful episode).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from vla.data.store import EpisodeStore
from worldmodel.config import WMTrainConfig, WorldModelConfig
from worldmodel.losses import value_targets


class WorldModelDataError(ValueError):
    """A store cannot feed this world model (missing camera, state size, task...)."""


@dataclass
class EpisodeData:
    """Every selected episode of the given stores, concatenated in memory."""

    state: np.ndarray  # float32 [N, D]
    action: np.ndarray  # float32 [N, A]
    reward: np.ndarray  # float32 [N]
    images: np.ndarray | None  # uint8 [N, n_cams, S, S, 3] resized, or None in state-only mode
    starts: np.ndarray  # int64 [E]
    lengths: np.ndarray  # int64 [E]
    success: np.ndarray  # bool [E]
    takeover: np.ndarray  # bool [E]: any intervention / recovery step
    task: str
    instructions: list[str]

    def __len__(self) -> int:
        return len(self.starts)


def resize_images(frames: np.ndarray, size: int, batch: int = 512) -> np.ndarray:
    """uint8 [N, H, W, 3] -> uint8 [N, size, size, 3] (bilinear)."""
    if frames.shape[1:3] == (size, size):
        return frames
    out = np.empty((len(frames), size, size, 3), np.uint8)
    for i in range(0, len(frames), batch):
        x = torch.from_numpy(frames[i:i + batch]).permute(0, 3, 1, 2).float()
        y = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
        out[i:i + batch] = y.round().clamp(0, 255).byte().permute(0, 2, 3, 1).numpy()
    return out


def observation_arrays(cfg: WorldModelConfig, obs_batch: Sequence[dict[str, Any]]
                       ) -> tuple[np.ndarray, np.ndarray | None]:
    """(state float32 [B, D], images uint8 [B, n_cams, S, S, 3] or None) of live observations, as the
    model with `cfg` encodes them; a camera it needs that an observation lacks is a one-line error."""
    state = np.stack([np.asarray(o["state"], np.float32) for o in obs_batch])
    if not cfg.cameras:
        return state, None
    for o in obs_batch:
        missing = [c for c in cfg.cameras if c not in o.get("images", {})]
        if missing:
            raise ValueError(f"the world model needs camera '{missing[0]}' in the observation "
                             f"(it has: {sorted(o.get('images', {}))}); evaluate with cameras={cfg.cameras}")
    images = np.stack([np.stack([resize_images(np.asarray(o["images"][c])[None], cfg.image_size)[0]
                                 for c in cfg.cameras]) for o in obs_batch])
    return state, images


def check_store(store: EpisodeStore, cfg: WorldModelConfig, where: str) -> None:
    """Clear one-line errors for a store this model cannot use."""
    s = store.schema
    for cam in cfg.cameras:
        if cam not in s.cameras:
            raise WorldModelDataError(f"{where}: no camera '{cam}' (the store has: "
                                      f"{', '.join(s.cameras) or 'none, it is state-only'})")
    if cfg.state_dim and s.state_dim != cfg.state_dim:
        raise WorldModelDataError(f"{where}: state size {s.state_dim}, the world model needs {cfg.state_dim}")
    if cfg.action_dim and s.action_dim != cfg.action_dim:
        raise WorldModelDataError(f"{where}: action size {s.action_dim}, the world model needs {cfg.action_dim}")
    bad = [d for d in cfg.probe_dims if not 0 <= d < s.state_dim]
    if bad:
        raise WorldModelDataError(f"{where}: model.probe_dims {bad} outside the store's state (size {s.state_dim})")
    if cfg.state_inputs > s.state_dim:
        raise WorldModelDataError(f"{where}: model.state_inputs {cfg.state_inputs} > the store's state size "
                                  f"{s.state_dim}")


def load_episodes(stores: Sequence[str | Path], cfg: WorldModelConfig, task: str = "",
                  episodes: Sequence[np.ndarray | None] | None = None,
                  exclude_sources: Sequence[str] = ("imagined",)) -> EpisodeData:
    """Read the selected episodes (all by default) of every store into memory. Imagined episodes
    are left out by default: a model must not learn from its own predictions."""
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("state", "action", "reward", "images", "lengths",
                                                           "success", "takeover")}
    instructions: list[str] = []
    tasks: set[str] = set()
    for i, path in enumerate(stores):
        if not EpisodeStore.exists(path):
            raise WorldModelDataError(f"{path}: not an EpisodeStore")
        store = EpisodeStore.open(path)
        check_store(store, cfg, str(path))
        table = store.table()
        sel = np.arange(len(table)) if episodes is None or episodes[i] is None else np.asarray(episodes[i])
        if task:
            sel = sel[table.task[sel] == task]
        if exclude_sources:
            sel = sel[~np.isin(table.source[sel], list(exclude_sources))]
        for e in sel:
            start, end = store.episode_bounds(int(e))
            parts["state"].append(store.read("state", start, end))
            parts["action"].append(store.read("action", start, end))
            parts["reward"].append(store.read("reward", start, end))
            flags = store.read("is_intervention", start, end) | store.read("is_recovery", start, end)
            if cfg.cameras:
                parts["images"].append(np.stack([resize_images(store.read(f"images/{c}", start, end), cfg.image_size)
                                                 for c in cfg.cameras], axis=1))
            parts["lengths"].append(np.array([end - start]))
            parts["success"].append(np.array([bool(table.success[e])]))
            parts["takeover"].append(np.array([bool(flags.any())]))
            instructions.append(str(table.instruction[e]))
            tasks.add(str(table.task[e]))
        store.close()
    if not parts["lengths"]:
        raise WorldModelDataError(f"no episodes{f' of task {task!r}' if task else ''} in {', '.join(map(str, stores))}")
    if len(tasks) > 1:
        raise WorldModelDataError(f"episodes of several tasks ({', '.join(sorted(tasks))}): a world model covers "
                                  "one task, choose it with --task")
    lengths = np.concatenate(parts["lengths"]).astype(np.int64)
    return EpisodeData(
        state=np.concatenate(parts["state"]).astype(np.float32),
        action=np.concatenate(parts["action"]).astype(np.float32),
        reward=np.concatenate(parts["reward"]).astype(np.float32),
        images=np.concatenate(parts["images"]) if cfg.cameras else None,
        starts=np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64), lengths=lengths,
        success=np.concatenate(parts["success"]), takeover=np.concatenate(parts["takeover"]),
        task=tasks.pop(), instructions=instructions)


def step_weights(data: EpisodeData, horizon_steps: int, train: WMTrainConfig) -> np.ndarray:
    """Sampling probability of each step as a window start (sums to 1)."""
    w = np.ones(len(data.state), np.float64)
    for e in range(len(data)):
        s, n = data.starts[e], data.lengths[e]
        if not data.success[e] or data.takeover[e]:
            w[s:s + n] *= train.oversample_failures
        if data.success[e]:
            w[s + max(0, n - horizon_steps):s + n] *= train.oversample_success_end
    return w / w.sum()


def window_indices(data: EpisodeData, episode: np.ndarray, t: np.ndarray, chunk: int, horizon: int
                   ) -> dict[str, np.ndarray]:
    """Global indices and masks of windows starting at local step t of `episode` (arrays [B])."""
    start, length = data.starts[episode][:, None], data.lengths[episode][:, None]
    k = np.arange(horizon + 1)[None]
    obs_local = t[:, None] + k * chunk  # [B, H+1]
    obs_valid = obs_local <= length - 1
    act_local = t[:, None, None] + (np.arange(horizon)[None, :, None] * chunk) + np.arange(chunk)[None, None]
    act_valid = act_local <= length[:, :, None] - 1  # [B, H, c]
    return {"obs": start + np.minimum(obs_local, length - 1), "obs_valid": obs_valid,
            "act": start[:, :, None] + np.minimum(act_local, length[:, :, None] - 1), "act_valid": act_valid,
            "obs_local": obs_local}


def make_batch(data: EpisodeData, episode: np.ndarray, t: np.ndarray, cfg: WorldModelConfig) -> dict[str, torch.Tensor]:
    """Tensors of the windows (episode[i], t[i]): see `window_indices`."""
    ix = window_indices(data, episode, t, cfg.chunk, cfg.horizon)
    reward = data.reward[ix["act"]] * ix["act_valid"]
    length = data.lengths[episode][:, None]
    value = value_targets(ix["obs_local"], length, data.success[episode][:, None], cfg.gamma)
    batch = {"state": torch.from_numpy(data.state[ix["obs"]]),
             "obs_valid": torch.from_numpy(ix["obs_valid"]),
             "action": torch.from_numpy(data.action[ix["act"]]),
             "chunk_valid": torch.from_numpy(ix["obs_valid"][:, :-1]),
             "success": torch.from_numpy((reward.max(-1) > 0.5).astype(np.float32)),
             "value": torch.from_numpy(value.astype(np.float32))}
    if data.images is not None:
        batch["images"] = torch.from_numpy(data.images[ix["obs"]])
    return batch


def sample_batch(data: EpisodeData, weights: np.ndarray, batch_size: int, cfg: WorldModelConfig,
                 rng: np.random.Generator) -> dict[str, torch.Tensor]:
    g = rng.choice(len(weights), size=batch_size, p=weights)
    episode = np.searchsorted(data.starts, g, side="right") - 1
    return make_batch(data, episode, g - data.starts[episode], cfg)


def split_episodes(n: int, val_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded split of episode indices 0..n-1 into (train, validation); validation is empty for
    fewer than 2 episodes or val_fraction 0."""
    order = np.random.default_rng(seed).permutation(n)
    n_val = round(n * val_fraction) if n >= 2 else 0
    return np.sort(order[n_val:]), np.sort(order[:n_val])


def subset(data: EpisodeData, episodes: np.ndarray) -> EpisodeData:
    """The given episodes of `data` as a new EpisodeData (copies)."""
    idx = np.concatenate([np.arange(data.starts[e], data.starts[e] + data.lengths[e]) for e in episodes])
    lengths = data.lengths[episodes]
    return EpisodeData(state=data.state[idx], action=data.action[idx], reward=data.reward[idx],
                       images=None if data.images is None else data.images[idx],
                       starts=np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64), lengths=lengths,
                       success=data.success[episodes], takeover=data.takeover[episodes], task=data.task,
                       instructions=[data.instructions[e] for e in episodes])
