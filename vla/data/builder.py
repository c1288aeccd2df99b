"""Build an episode step by step (rollouts, correction sessions) and hand it to the store whole."""

from __future__ import annotations

from typing import Any

import numpy as np

from vla.data.schema import IMAGE_PREFIX, Episode, EpisodeValidationError


class EpisodeBuilder:
    """Collects steps in memory; `finish()` returns an Episode ready for `EpisodeStore.append_episode`."""

    def __init__(self, task: str, instruction: str, source: str, seed: int = -1) -> None:
        self.task, self.instruction, self.source, self.seed = task, instruction, source, seed
        self._steps: dict[str, list[Any]] = {}

    def __len__(self) -> int:
        return len(self._steps.get("action", []))

    def add_step(self, *, images: dict[str, np.ndarray], state: np.ndarray, action: np.ndarray,
                 timestamp: float, reward: float = 0.0, is_intervention: bool = False,
                 is_recovery: bool = False, policy_version: int = 0) -> None:
        values: dict[str, Any] = {f"{IMAGE_PREFIX}{cam}": img for cam, img in images.items()}
        values.update(state=state, action=action, reward=reward, is_intervention=is_intervention,
                      is_recovery=is_recovery, policy_version=policy_version, timestamp=timestamp)
        if self._steps and set(values) != set(self._steps):
            missing = sorted(set(self._steps) ^ set(values))
            raise EpisodeValidationError("step keys differ from the previous steps'", key=missing[0],
                                         step=len(self))
        for key, value in values.items():
            self._steps.setdefault(key, []).append(np.asarray(value))

    def finish(self, success: bool) -> Episode:
        steps = {k: np.stack(v) for k, v in self._steps.items()}
        return Episode(steps=steps, task=self.task, instruction=self.instruction, success=bool(success),
                       source=self.source, seed=self.seed)
