"""The Normalizer: a key's values to roughly [-1, 1] and back, from a store's statistics
(vla/data/store_stats.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vla.data.stats import Stats


@dataclass
class Normalizer:
    """Maps a key's values to roughly [-1, 1] and back, by mean/std or by 1st/99th percentiles."""

    stats: dict[str, Stats]
    mode: str = "mean_std"  # or "quantile"
    eps: float = 1e-6

    def _scale(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        s = self.stats[key]
        if self.mode == "mean_std":
            return s.mean, np.maximum(s.std, self.eps)
        if self.mode == "quantile":
            return (s.q99 + s.q01) / 2, np.maximum((s.q99 - s.q01) / 2, self.eps)
        raise ValueError(f"unknown normalisation mode '{self.mode}' (valid: mean_std, quantile)")

    def normalize(self, key: str, x: np.ndarray) -> np.ndarray:
        center, scale = self._scale(key)
        return ((x - center) / scale).astype(np.float32)

    def unnormalize(self, key: str, x: np.ndarray) -> np.ndarray:
        center, scale = self._scale(key)
        return (x * scale + center).astype(np.float32)
