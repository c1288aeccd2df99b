"""Labelled frames for the pose estimator from an EpisodeStore: every camera's images and the object
poses of the same steps, read back from the states (a store collected with obs_mode=state holds the
simulator's poses as its state features: vla.robot.objects)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vla.data.schema import closest
from vla.perception.model import ARM, canonical_quat  # ARM: the arm's state before a task's object features


@dataclass
class Frames:
    images: dict[str, np.ndarray]  # camera -> uint8 [N, H, W, 3]
    poses: np.ndarray  # float64 [N, K, 7], quaternions canonical (w >= 0)
    episode: np.ndarray  # int [N]: the store's episode index of each frame
    task: str
    objects: tuple[str, ...]
    arm: np.ndarray | None = None  # float64 [N, 9]: the arm's own state of each frame (hand, fingers)

    def __len__(self) -> int:
        return len(self.poses)

    def subset(self, mask: np.ndarray) -> Frames:
        return Frames({c: v[mask] for c, v in self.images.items()}, self.poses[mask], self.episode[mask],
                      self.task, self.objects, None if self.arm is None else self.arm[mask])


def load_frames(path: str | Path, cameras: list[str] | None = None, every: int = 1,
                episodes: np.ndarray | None = None, progress: bool = True) -> Frames:
    """The store's frames (every `every`-th step of each episode; of `episodes` when given) with their
    object poses. One task per store: a store that mixes tasks, or holds no object features, is an error
    naming what it holds."""
    from vla.data.store import EpisodeStore
    from vla.progress import progress as tqdm
    from vla.robot.objects import object_feature_count, pose_features, poses_from_states

    store = EpisodeStore.open(path)
    table = store.table()
    if store.n_episodes == 0:
        raise ValueError(f"{path}: the store holds no episodes")
    tasks = sorted(set(table.task))
    if len(tasks) != 1:
        raise ValueError(f"{path}: the store mixes tasks {tasks}; the pose estimator learns one task's objects")
    task = tasks[0]
    names, _ = pose_features(task)
    own = list(store.schema.cameras)
    cams = own if cameras is None else list(cameras)
    for c in cams:
        if c not in own:
            raise ValueError(f"{path}: no camera '{c}'{closest(c, own)} (the store has {', '.join(own) or 'none'})")
    if not cams:
        raise ValueError(f"{path}: no cameras to estimate poses from")
    want = ARM + object_feature_count(task)
    if store.schema.state_dim != want:
        raise ValueError(f"{path}: states are {store.schema.state_dim}-d; task '{task}' with its object poses "
                         f"has {want} (collect with obs_mode=state: `vla sim collect STORE obs_mode=state`)")
    index = np.arange(store.n_episodes) if episodes is None else np.asarray(episodes)
    images: dict[str, list[np.ndarray]] = {c: [] for c in cams}
    poses, owner, arm = [], [], []
    for i in tqdm(index, desc=f"frames of {Path(path).name}", disable=not progress):
        start, end = store.episode_bounds(int(i))
        steps = np.arange(start, end)[::every] - start
        for c in cams:
            images[c].append(store.read(f"images/{c}", start, end)[steps])
        states = store.read("state", start, end)[steps]
        poses.append(poses_from_states(task, states))
        arm.append(np.asarray(states[:, :ARM], np.float64))
        owner.append(np.full(len(steps), int(i)))
    return Frames({c: np.concatenate(v) for c, v in images.items()}, canonical_quat(np.concatenate(poses)),
                  np.concatenate(owner), task, tuple(names), np.concatenate(arm))


def split_episodes(n_episodes: int, share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(training, validation) episode indices: `share` of them (at least one when share > 0) held out."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(n_episodes)
    n_val = 0 if share <= 0 else max(1, round(share * n_episodes))
    if n_val >= n_episodes:
        raise ValueError(f"val_episodes={share} leaves no training episodes of {n_episodes}")
    return np.sort(order[n_val:]), np.sort(order[:n_val])
