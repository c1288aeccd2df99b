"""Synthetic datasets in the training batch format (the one `vla.data.dataset.WindowDataset`
produces), for policy and training tests.

LineDataset: the state holds a point c; the action chunk is a straight line from c in the
direction s * u with a sign s in {-1, +1} that the observation does NOT reveal. So the chunk
distribution is bimodal, and only a given prefix tells which branch to continue: the test of
training-time RTC.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset

from vla.data.stats import ByteHistogramStats, RunningStats, Stats

DIRECTION = np.array([1.0, 0.5], np.float32)
STEP = 0.1


class LineDataset(Dataset):
    def __init__(self, n: int = 256, chunk: int = 16, cameras: tuple[str, ...] = (), image_hw: int = 16,
                 n_obs_steps: int = 1, state_dim: int = 3, seed: int = 0,
                 instructions: tuple[str, ...] = ("follow the line",), quat_at: int | None = None) -> None:
        rng = np.random.default_rng(seed)
        # quat_at: state[quat_at:quat_at + 4] holds a random unit quaternion per sample (either sign)
        q = rng.standard_normal((n, 4))
        self.quats = (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)
        self.quat_at = quat_at
        self.n, self.chunk, self.cameras, self.hw, self.to = n, chunk, cameras, image_hw, n_obs_steps
        self.instructions = instructions
        self.center = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
        self.sign = rng.choice([-1.0, 1.0], n).astype(np.float32)
        self.state_dim = state_dim
        self.pixels = rng.integers(0, 256, (n, image_hw, image_hw, 3), dtype=np.uint8)

    def __len__(self) -> int:
        return self.n

    def actions(self, i: int) -> np.ndarray:
        k = np.arange(1, self.chunk + 1, dtype=np.float32)[:, None]
        return self.center[i] + self.sign[i] * STEP * k * DIRECTION

    def state(self, i: int) -> np.ndarray:
        s = np.zeros(self.state_dim, np.float32)
        s[:2] = self.center[i]
        if self.quat_at is not None:
            s[self.quat_at:self.quat_at + 4] = self.quats[i]
        return s

    def future_state(self, i: int) -> np.ndarray:
        """Where the chunk ends: the state the chunk led to, which depends on the hidden sign."""
        s = self.state(i)
        s[:2] = self.actions(i)[-1]
        return s

    def __getitem__(self, i: int) -> dict:
        mask = np.ones(self.chunk, bool)
        if i % 5 == 0:  # some chunks run past the episode end
            mask[self.chunk - 3 :] = False
        return {
            "images": {c: torch.from_numpy(np.repeat(self.pixels[i][None], self.to, 0)) for c in self.cameras},
            "state": torch.from_numpy(np.repeat(self.state(i)[None], self.to, 0)),
            "future_state": torch.from_numpy(self.future_state(i)),
            "obs_mask": torch.ones(self.to, dtype=torch.bool),
            "action": torch.from_numpy(self.actions(i)),
            "action_mask": torch.from_numpy(mask),
            "is_intervention": torch.zeros(self.chunk, dtype=torch.bool),
            "instruction": self.instructions[i % len(self.instructions)],
            "task": "line",
            "episode_index": i,
            "step_index": 0,
        }

    def stats(self) -> dict[str, Stats]:
        out = {}
        for key, rows in (("state", np.stack([self.state(i) for i in range(self.n)])),
                          ("action", np.concatenate([self.actions(i) for i in range(self.n)]))):
            acc = RunningStats(rows.shape[1])
            acc.update(rows)
            out[key] = acc.finish()
        for c in self.cameras:
            hist = ByteHistogramStats(3)
            hist.update(self.pixels.reshape(-1, 3))
            out[f"images/{c}"] = hist.finish()
        return out

    def observation(self, i: int) -> dict:
        return {"images": {c: self.pixels[i] for c in self.cameras}, "state": self.state(i),
                "instruction": self.instructions[i % len(self.instructions)], "timestamp": 0.0}
