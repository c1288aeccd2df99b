"""Deterministic synthetic episodes: a point moving towards a goal, drawn into small images.

Used by tests, benchmarks and the main job's data stage before a simulator is configured. The
content is a pure function of (schema, seed), so a test can regenerate and compare any episode
value for value. Images are smooth with a moving square, so they compress like camera frames.
"""

from __future__ import annotations

import numpy as np

from vla.data.schema import IMAGE_PREFIX, SOURCES, Episode, StoreSchema

TASKS = {"reach": ["reach the goal", "move to the target"], "push": ["push the block", "slide the cube over"]}


def synthetic_episode(schema: StoreSchema, seed: int, length: int | None = None) -> Episode:
    rng = np.random.default_rng(seed)
    n = int(length if length is not None else rng.integers(20, 60))
    task = sorted(TASKS)[seed % len(TASKS)]
    start, goal = rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2)
    alpha = np.linspace(0, 1, n)[:, None]
    pos = start + (goal - start) * (1 - (1 - alpha) ** 2) + 0.01 * rng.standard_normal((n, 2))
    vel = np.gradient(pos, axis=0)
    state = np.zeros((n, schema.state_dim), np.float32)
    state[:, : min(2, schema.state_dim)] = pos[:, : schema.state_dim]
    if schema.state_dim > 2:
        state[:, 2 : min(4, schema.state_dim)] = vel[:, : schema.state_dim - 2]
        state[:, 4:] = rng.standard_normal((n, max(0, schema.state_dim - 4))).astype(np.float32) * 0.1
    action = np.zeros((n, schema.action_dim), np.float32)
    action[:, : min(2, schema.action_dim)] = (goal - pos)[:, : schema.action_dim]
    action[:, 2:] = np.tanh(rng.standard_normal((n, max(0, schema.action_dim - 2)))).astype(np.float32)
    steps: dict[str, np.ndarray] = {"state": state, "action": action}
    for i, (cam, (h, w)) in enumerate(schema.cameras.items()):
        steps[f"{IMAGE_PREFIX}{cam}"] = _render(pos, goal, h, w, shift=i)
    intervention = np.zeros(n, bool)
    recovery = np.zeros(n, bool)
    if seed % 3 == 0:  # every third episode carries an intervention, the first steps of it a rewind
        a = n // 2
        intervention[a:] = True
        recovery[a : a + max(1, n // 10)] = True
    steps.update(reward=(np.arange(n) == n - 1).astype(np.float32), is_intervention=intervention,
                 is_recovery=recovery, policy_version=np.full(n, seed % 4, np.int32),
                 timestamp=np.arange(n) / schema.fps)
    return Episode(steps=steps, task=task, instruction=TASKS[task][seed % 2], success=bool(seed % 5 != 0),
                   source=SOURCES[seed % len(SOURCES)], seed=seed)


def _render(pos: np.ndarray, goal: np.ndarray, h: int, w: int, shift: int) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    background = np.stack([96 + 64 * yy / h, 80 + 48 * xx / w, np.full((h, w), 128.0 + 40 * shift)], -1)
    frames = np.repeat(background[None], len(pos), 0)
    size = max(2, h // 10)
    gy, gx = ((goal[::-1] + 1) / 2 * [h - size, w - size]).astype(int)
    frames[:, gy : gy + size, gx : gx + size] = (40, 200, 40)
    for t, p in enumerate(pos):
        py, px = np.clip((p[::-1] + 1) / 2 * [h - size, w - size], 0, [h - size, w - size]).astype(int)
        frames[t, py : py + size, px : px + size] = (220, 40, 40)
    return frames.astype(np.uint8)


def default_schema(image_size: int = 84, cameras: tuple[str, ...] = ("agentview", "robot0_eye_in_hand"),
                   state_dim: int = 9, action_dim: int = 7) -> StoreSchema:
    return StoreSchema(cameras={c: (image_size, image_size) for c in cameras}, state_dim=state_dim,
                       action_dim=action_dim, fps=20.0)
