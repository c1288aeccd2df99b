"""Training windows from an EpisodeStore: a sampler of window indices and a torch Dataset.

A window at step t of an episode holds an observation history of `obs_horizon` (To) steps ending
at t, an action chunk of `action_horizon` (H) steps starting at t, and the state the chunk led to
(`future_state`, step t + H or the episode's last; the policy's optional auxiliary target). Where the history reaches
before the episode start it repeats the first frame, and where the chunk runs past the end it
repeats the last action; `obs_mask` / `action_mask` say which entries are real, so padded actions
never enter a loss. Same conventions as diffusion_policy's SequenceSampler, plus explicit masks.

Reading: low-dimensional keys are loaded into memory once (they are small). Images either
- `cache="memory"`: are decompressed into memory once when the dataset is built (as
  diffusion_policy's in-memory ReplayBuffer; DataLoader workers share the pages copy-on-write),
  after which a window is a numpy gather; or
- `cache="chunks"`: are read per window through a per-process LRU cache of decoded zarr chunks, for
  stores larger than memory (random order then pays a zarr chunk read for most windows);
- `cache="auto"` (default) picks memory when the decoded images fit `memory_budget_gb`.
The dataset is a snapshot of the episodes committed when it was built, safe to use while a
writer appends.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler, SequentialSampler

from vla.data.schema import IMAGE_PREFIX
from vla.data.store import EpisodeStore

LOW_DIM_KEYS = ("state", "action", "is_intervention")


@dataclass(frozen=True)
class WindowIndex:
    """Flat arrays, one row per window: episode, global step t, episode start and end (exclusive)."""

    episode: np.ndarray
    step: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def __len__(self) -> int:
        return len(self.step)


def build_window_index(episode_starts: np.ndarray, episode_ends: np.ndarray, episodes: np.ndarray,
                       stride: int = 1) -> WindowIndex:
    """Every `stride`-th step of each selected episode becomes a window start."""
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    parts_ep, parts_t, parts_s, parts_e = [], [], [], []
    for ep in episodes:
        s, e = int(episode_starts[ep]), int(episode_ends[ep])
        steps = np.arange(s, e, stride, dtype=np.int64)
        parts_ep.append(np.full(len(steps), ep, np.int64))
        parts_t.append(steps)
        parts_s.append(np.full(len(steps), s, np.int64))
        parts_e.append(np.full(len(steps), e, np.int64))
    if not parts_t:
        empty = np.zeros(0, np.int64)
        return WindowIndex(empty, empty, empty, empty)
    return WindowIndex(*(np.concatenate(p) for p in (parts_ep, parts_t, parts_s, parts_e)))


def window_positions(t: int, start: int, end: int, obs_horizon: int,
                     action_horizon: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Global step indices (clamped into the episode) and validity masks of one window."""
    obs = np.arange(t - obs_horizon + 1, t + 1)
    act = np.arange(t, t + action_horizon)
    return (np.clip(obs, start, end - 1), obs >= start, np.clip(act, start, end - 1), act < end)


class _ChunkCache:
    """LRU cache of decoded zarr chunks of one image key, per process (DataLoader worker)."""

    def __init__(self, store: EpisodeStore, key: str, capacity: int) -> None:
        self.store, self.key, self.capacity = store, key, capacity
        self.chunk = store.chunk_length(key)
        self._cache: OrderedDict[int, np.ndarray] = OrderedDict()

    def _get(self, index: int) -> np.ndarray:
        block = self._cache.get(index)
        if block is None:
            lo = index * self.chunk
            block = self.store.read(self.key, lo, min(lo + self.chunk, self.store.n_steps))
            self._cache[index] = block
            if len(self._cache) > self.capacity:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(index)
        return block

    def take(self, steps: np.ndarray) -> np.ndarray:
        return np.stack([self._get(int(s) // self.chunk)[int(s) % self.chunk] for s in steps])


class WindowDataset(Dataset):
    """Training windows of the selected episodes of a store (see the module docstring)."""

    def __init__(self, store: EpisodeStore | str, episodes: Sequence[int] | np.ndarray | None = None, *,
                 obs_horizon: int = 1, action_horizon: int = 16, cameras: Sequence[str] | None = None,
                 stride: int = 1, cache: str = "auto", memory_budget_gb: float = 8.0,
                 cache_chunks: int = 64, loss_weights: np.ndarray | None = None,
                 sample_weights: np.ndarray | None = None,
                 instruction_aliases: Mapping[str, Sequence[str]] | None = None,
                 supervise_until: np.ndarray | None = None) -> None:
        """`loss_weights` (per global step, refinement): batches gain `loss_weight` [B, H], the
        weight of each action in the BC loss. `sample_weights` (per global step): the trainer
        draws windows in proportion to the weight of their first step (`window_weights`).
        `instruction_aliases`: instruction -> paraphrases; each window's instruction is drawn
        uniformly from the stored one and its paraphrases (see `alias_instruction`).
        `supervise_until` (per global step, with `loss_weights`): a window starting at step t
        weights only the actions of steps before `supervise_until[t]` (a policy's own window ends
        with the chunk it executed, `vla.refine.weights.executed_chunk_ends`)."""
        self.store = EpisodeStore.open(store) if not isinstance(store, EpisodeStore) else store
        if obs_horizon < 1 or action_horizon < 1:
            raise ValueError(f"obs_horizon and action_horizon must be >= 1, got {obs_horizon}, {action_horizon}")
        valid_cams = list(self.store.schema.cameras)
        self.cameras = valid_cams if cameras is None else list(cameras)
        for cam in self.cameras:
            if cam not in valid_cams:
                raise KeyError(f"camera '{cam}' is not in the store {self.store.path} (cameras: {valid_cams})")
        table = self.store.table()
        self.episodes = np.arange(len(table)) if episodes is None else np.asarray(episodes, dtype=np.int64)
        if len(self.episodes) and (self.episodes.min() < 0 or self.episodes.max() >= len(table)):
            raise IndexError(f"episode indices must be in [0, {len(table)}), got {self.episodes.min()}.."
                             f"{self.episodes.max()}")
        self.obs_horizon, self.action_horizon = obs_horizon, action_horizon
        self.index = build_window_index(table.episode_starts, table.episode_ends, self.episodes, stride)
        self._instruction, self._task = table.instruction, table.task
        self._episode_starts = np.asarray(table.episode_starts, np.int64)
        self.instruction_aliases = {k: (k, *v) for k, v in (instruction_aliases or {}).items()}
        n = self.store.n_steps
        self.loss_weights = _per_step("loss_weights", loss_weights, n, np.float32)
        if supervise_until is not None and loss_weights is None:
            raise ValueError("supervise_until limits the loss weights: give loss_weights too")
        self.supervise_until = _per_step("supervise_until", supervise_until, n, np.int64)
        sample = _per_step("sample_weights", sample_weights, n, np.float64)
        self.window_weights = None if sample is None else sample[self.index.step]
        if self.window_weights is not None and not self.window_weights.sum() > 0:
            raise ValueError("sample_weights give every window of the selected episodes zero weight")
        self._low_dim = {k: np.asarray(self.store.read(k, 0, n)) for k in LOW_DIM_KEYS}
        self._cache_chunks = cache_chunks
        self._caches: dict[str, _ChunkCache] | None = None  # built lazily in each worker
        if cache not in ("auto", "memory", "chunks"):
            raise ValueError(f"cache must be 'auto', 'memory' or 'chunks', got {cache!r}")
        image_bytes = sum(n * h * w * 3 for cam, (h, w) in self.store.schema.cameras.items() if cam in self.cameras)
        if cache == "auto":
            cache = "memory" if image_bytes <= memory_budget_gb * 1e9 else "chunks"
        self.cache = cache
        self._images: dict[str, np.ndarray] = {}
        if cache == "memory":
            self._images = {cam: np.asarray(self.store.read(f"{IMAGE_PREFIX}{cam}", 0, n)) for cam in self.cameras}

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int) -> dict:
        if not 0 <= i < len(self.index):
            raise IndexError(f"window {i} out of range [0, {len(self.index)})")
        ep, t = int(self.index.episode[i]), int(self.index.step[i])
        obs_idx, obs_mask, act_idx, act_mask = window_positions(
            t, int(self.index.start[i]), int(self.index.end[i]), self.obs_horizon, self.action_horizon)
        return {
            "images": {cam: torch.from_numpy(self._take_images(cam, obs_idx)) for cam in self.cameras},
            "state": torch.from_numpy(self._low_dim["state"][obs_idx]),
            "future_state": torch.from_numpy(self._low_dim["state"][min(t + self.action_horizon,
                                                                            int(self.index.end[i]) - 1)]),
            "obs_mask": torch.from_numpy(obs_mask),
            "action": torch.from_numpy(self._low_dim["action"][act_idx]),
            "action_mask": torch.from_numpy(act_mask),
            "is_intervention": torch.from_numpy(self._low_dim["is_intervention"][act_idx]),
            "instruction": self._phrasings([str(self._instruction[ep])], np.array([i]))[0],
            "task": str(self._task[ep]),
            "episode_index": ep,
            "step_index": t - int(self.index.start[i]),
            **({"loss_weight": torch.from_numpy(self.loss_weights[act_idx] * self._supervised(act_mask, t))}
               if self.loss_weights is not None else {}),
        }


    def get_batch(self, indices: Sequence[int] | np.ndarray) -> dict:
        """A whole batch, already collated: one gather per key instead of one per window plus a
        collate (the collate alone costs more than the reads). `loader()` fetches this way."""
        idx = np.asarray(indices, dtype=np.int64)
        if len(idx) and (idx.min() < 0 or idx.max() >= len(self.index)):
            raise IndexError(f"window indices must be in [0, {len(self.index)})")
        t, start, end = self.index.step[idx], self.index.start[idx], self.index.end[idx]
        obs = t[:, None] + np.arange(-self.obs_horizon + 1, 1)[None]
        act = t[:, None] + np.arange(self.action_horizon)[None]
        obs_idx = np.clip(obs, start[:, None], end[:, None] - 1)
        act_idx = np.clip(act, start[:, None], end[:, None] - 1)
        episodes = self.index.episode[idx]
        return {
            "images": {cam: torch.from_numpy(self._take_images(cam, obs_idx.ravel()).reshape(
                *obs_idx.shape, *self.store.schema.step_shapes()[f"{IMAGE_PREFIX}{cam}"])) for cam in self.cameras},
            "state": torch.from_numpy(self._low_dim["state"][obs_idx]),
            "future_state": torch.from_numpy(self._low_dim["state"][np.minimum(t + self.action_horizon, end - 1)]),
            "obs_mask": torch.from_numpy(obs >= start[:, None]),
            "action": torch.from_numpy(self._low_dim["action"][act_idx]),
            "action_mask": torch.from_numpy(act < end[:, None]),
            "is_intervention": torch.from_numpy(self._low_dim["is_intervention"][act_idx]),
            "instruction": self._phrasings([str(self._instruction[e]) for e in episodes], idx),
            "task": [str(self._task[e]) for e in episodes],
            "episode_index": torch.from_numpy(episodes),
            "step_index": torch.from_numpy(t - start),
            **({"loss_weight": torch.from_numpy(self.loss_weights[act_idx] * self._supervised(act < end[:, None], t))}
               if self.loss_weights is not None else {}),
        }

    def earlier_states(self, episodes: np.ndarray, steps: np.ndarray, lag: int) -> np.ndarray:
        """The raw states [B, To, D] that windows (store episode, step within it) would see `lag` steps
        earlier, each clipped at its episode's first step (what a sensor `lag` steps late delivers)."""
        episodes, steps = np.asarray(episodes, np.int64), np.asarray(steps, np.int64)
        start = self._episode_starts[episodes]
        obs = (start + steps)[:, None] + np.arange(-self.obs_horizon + 1, 1)[None] - int(lag)
        return self._low_dim["state"][np.maximum(obs, start[:, None])]

    def _supervised(self, act_mask: np.ndarray, t: np.ndarray | int) -> np.ndarray:
        """`act_mask` ([H] or [B, H]) limited to the actions before `supervise_until` of the
        windows' first steps `t`."""
        if self.supervise_until is None:
            return act_mask
        t = np.asarray(t)
        act = t[..., None] + np.arange(self.action_horizon)
        return act_mask & (act < self.supervise_until[t][..., None])

    def _phrasings(self, instructions: list[str], windows: np.ndarray) -> list[str]:
        if not self.instruction_aliases:
            return instructions
        # seeded by the windows themselves: a batch gets the same phrasings whenever it is drawn again
        # (exact resume), and no shared RNG is touched from the prefetch threads
        rng = np.random.default_rng(np.asarray(windows, dtype=np.uint64))
        return [alias_instruction(t, self.instruction_aliases, rng) for t in instructions]

    def loader(self, batch_size: int, *, shuffle: bool = True, num_workers: int = 2, seed: int | None = None,
               threads: int = 0, **kwargs: object) -> DataLoader | ThreadedBatches:
        """Batches of windows (`get_batch`), fetched by `num_workers` DataLoader worker processes or,
        with `threads > 0` (in-memory cache only), by that many prefetch threads in this process.

        Threads avoid the DataLoader's per-batch shared-memory hand-off, which for an in-memory
        dataset costs several times the gather itself (numpy's gather releases the GIL)."""
        generator = torch.Generator().manual_seed(seed) if seed is not None else None
        base = RandomSampler(self, generator=generator) if shuffle else SequentialSampler(self)
        if threads > 0:
            if self.cache != "memory":
                raise ValueError("threads > 0 needs cache='memory' (zarr chunk reads are not thread-safe here)")
            return ThreadedBatches(self, BatchSampler(base, batch_size, drop_last=False), threads)
        return DataLoader(BatchView(self), batch_size=None, sampler=BatchSampler(base, batch_size, drop_last=False),
                          num_workers=num_workers, persistent_workers=num_workers > 0, **kwargs)  # type: ignore[arg-type]

    def _take_images(self, cam: str, steps: np.ndarray) -> np.ndarray:
        if self.cache == "memory":
            return self._images[cam][steps]
        if self._caches is None:
            self._caches = {c: _ChunkCache(self.store, f"{IMAGE_PREFIX}{c}", self._cache_chunks) for c in self.cameras}
        return self._caches[cam].take(steps)


def alias_instruction(text: str, aliases: Mapping[str, Sequence[str]], rng: np.random.Generator) -> str:
    """One of `aliases[text]` (which lists the instruction itself among its phrasings), uniformly;
    an instruction without aliases stays. Instruction augmentation with paraphrases, as DIAL
    (arXiv 2211.11736) relabels with model-written ones; here they come from a file."""
    options = aliases.get(text)
    return text if not options else options[int(rng.integers(len(options)))]


def load_instruction_aliases(path: str | Path) -> dict[str, list[str]]:
    """A JSON or YAML file {instruction: [paraphrase, ...]}, checked, with a one-line error naming the
    file and what is wrong."""
    import json

    import yaml

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"instruction aliases file not found: {p}")
    try:
        raw = json.loads(p.read_text()) if p.suffix == ".json" else yaml.safe_load(p.read_text())
    except (ValueError, yaml.YAMLError) as e:
        raise ValueError(f"{p}: not valid {'JSON' if p.suffix == '.json' else 'YAML'} ({e})") from None
    if not isinstance(raw, dict) or not raw:
        raise ValueError(f"{p}: expected a non-empty mapping instruction -> list of paraphrases")
    out: dict[str, list[str]] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"{p}: instruction {key!r} is not a non-empty string")
        if (not isinstance(value, list) or not value
                or not all(isinstance(v, str) and v.strip() for v in value)):
            raise ValueError(f"{p}: paraphrases of '{key}' must be a non-empty list of non-empty strings")
        out[key] = [v for v in value if v != key]
    return out


def _per_step(name: str, values: np.ndarray | None, n: int, dtype: type) -> np.ndarray | None:
    if values is None:
        return None
    arr = np.asarray(values, dtype=dtype)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have one value per store step, shape ({n},), got {arr.shape}")
    if not np.all(np.isfinite(arr)) or (arr < 0).any():
        raise ValueError(f"{name} must be finite and >= 0")
    return arr


class ThreadedBatches:
    """Iterates `dataset.get_batch` over a batch sampler with a few prefetch threads, in order."""

    def __init__(self, dataset: WindowDataset, batch_sampler: BatchSampler, threads: int = 2,
                 prefetch: int = 4) -> None:
        self.dataset, self.batch_sampler, self.threads, self.prefetch = dataset, batch_sampler, threads, prefetch

    def __len__(self) -> int:
        return len(self.batch_sampler)

    def __iter__(self) -> Iterator[dict]:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(self.threads) as pool:
            pending: deque = deque()
            for indices in self.batch_sampler:
                pending.append(pool.submit(self.dataset.get_batch, indices))
                if len(pending) > self.prefetch:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()


class BatchView(Dataset):
    """Indexes a WindowDataset by lists of window indices (for a DataLoader with a BatchSampler)."""

    def __init__(self, windows: WindowDataset) -> None:
        self.windows = windows

    def __len__(self) -> int:
        return len(self.windows)

    def __getitem__(self, indices: list[int]) -> dict:
        return self.windows.get_batch(indices)


def split_episodes(episodes: np.ndarray, val_fraction: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Hold out a seeded random `val_fraction` of episodes (at least one when there are two or more)."""
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(np.asarray(episodes))
    n_val = round(len(perm) * val_fraction)
    if val_fraction > 0 and n_val == 0 and len(perm) >= 2:
        n_val = 1
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])
