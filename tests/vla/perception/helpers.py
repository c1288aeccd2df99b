"""Stores for the pose estimator's tests: pick_place-shaped episodes (9 proprioception values, then the 13
object features) whose frames draw the cube and the zone where the features say they are."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vla.data.schema import Episode, StoreSchema
from vla.data.store import EpisodeStore
from vla.data.synthetic import _render
from vla.robot.objects import pick_place_features

CAMERAS = ("agentview", "robot0_eye_in_hand")
SCALE = 0.2  # metres of table per unit of the drawing's [-1, 1]


def pose_episode(seed: int, image_size: int, length: int = 12, task: str = "pick_place") -> Episode:
    rng = np.random.default_rng(seed)
    start, zone = rng.uniform(-0.8, 0.8, 2), rng.uniform(-0.8, 0.8, 2)
    alpha = np.linspace(0, 1, length)[:, None]
    cube_xy = start + (zone - start) * alpha
    state = np.zeros((length, 22), np.float32)
    for t in range(length):
        yaw = 0.3 * np.sin(seed + t)
        cube = np.array([*(SCALE * cube_xy[t]), 0.02, 0.0, 0.0, np.sin(yaw / 2), np.cos(yaw / 2)])
        zone_pose = np.array([*(SCALE * zone), 0.0, 0.0, 0.0, 0.0, 1.0])
        state[t, 9:] = pick_place_features(np.stack([cube, zone_pose]), np.zeros(3))
    steps = {f"images/{c}": _render(cube_xy, zone, image_size, image_size, shift=i) for i, c in enumerate(CAMERAS)}
    steps.update(state=state, action=np.zeros((length, 7), np.float32), reward=np.zeros(length, np.float32),
                 is_intervention=np.zeros(length, bool), is_recovery=np.zeros(length, bool),
                 policy_version=np.zeros(length, np.int32), timestamp=np.arange(length) / 20.0)
    return Episode(steps=steps, task=task, instruction="put the cube in the zone", success=True, source="demo",
                   seed=seed)


def pose_store(path: Path, episodes: int, image_size: int = 24, state_dim: int = 22,
               tasks: tuple[str, ...] = ("pick_place",)) -> Path:
    schema = StoreSchema(cameras={c: (image_size, image_size) for c in CAMERAS}, state_dim=state_dim, action_dim=7)
    store = EpisodeStore.create(path, schema)
    for i in range(episodes):
        ep = pose_episode(i, image_size, task=tasks[i % len(tasks)])
        ep.steps["state"] = ep.steps["state"][:, :state_dim]
        store.append_episode(ep)
    store.close()
    return path


def debug_estimator(folder: Path, image_size: int = 24, *overrides: str) -> str:
    """A pose estimator trained for the debug preset's two steps on a two-episode store: what tests that need
    a real estimator folder (its files, cameras and objects), not an accurate one, load."""
    from vla.config import load_config
    from vla.perception.config import PerceptionConfig
    from vla.perception.train import train

    store = pose_store(folder / "poses.zarr", 2, image_size=image_size)
    train(store, load_config(PerceptionConfig, "perception", "debug", [f"out_dir={folder / 'est'}", *overrides]),
          progress=False)
    return str(folder / "est")
