"""The one episode schema used everywhere: demos, rollouts, interventions, guided and imagined data.

Per step: ``images/<camera>`` (uint8 HxWx3), ``state`` (float32[D]), ``action`` (float32[A]),
``reward``, ``is_intervention``, ``is_recovery``, ``policy_version``, ``timestamp``.
Per episode: task, instruction, success, source, seed.

Validation is a pure function over an episode that has not been written yet, so a rejected
episode never touches the store.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np


class Source(StrEnum):
    """What an episode is: where its actions came from (stored as the value; compares equal to it)."""

    DEMO = "demo"  # a demonstration (teleoperated or scripted expert)
    ROLLOUT = "rollout"  # the policy acting in the environment (a person may take over: is_intervention)
    INTERVENTION = "intervention"  # an episode driven by the person throughout
    GUIDED = "guided"  # the policy acting under test-time guidance (ReGuide)
    IMAGINED = "imagined"  # never executed: the policy's chunks played inside a world model
    PROPOSED = "proposed"  # never executed: a chunk sampled from the policy at a recorded state, chosen by a critic


SOURCES = tuple(s.value for s in Source)
# the sources whose episodes were executed in the environment (real outcomes, real seeds)
EXECUTED = (Source.ROLLOUT.value, Source.INTERVENTION.value, Source.GUIDED.value)
IMAGE_PREFIX = "images/"
LOW_DIM_STEP_KEYS = ("state", "action", "reward", "is_intervention", "is_recovery", "policy_version", "timestamp")
# Stored dtype of every non-image step key, and the dtype kinds accepted on input.
STEP_DTYPES: dict[str, np.dtype] = {
    "state": np.dtype(np.float32),
    "action": np.dtype(np.float32),
    "reward": np.dtype(np.float32),
    "is_intervention": np.dtype(bool),
    "is_recovery": np.dtype(bool),
    "policy_version": np.dtype(np.int32),
    "timestamp": np.dtype(np.float64),
}
_ACCEPTED_KINDS = {"f": "a floating-point dtype", "b": "bool", "i": "an integer dtype"}
_FINITE_KEYS = ("state", "action", "reward", "timestamp")


class EpisodeValidationError(ValueError):
    """An episode was rejected; names the key, the episode and (when it applies) the step."""

    def __init__(self, message: str, *, key: str | None = None, episode: int | None = None,
                 step: int | None = None) -> None:
        where = []
        if episode is not None:
            where.append(f"episode {episode}")
        if key is not None:
            where.append(f"key '{key}'")
        if step is not None:
            where.append(f"step {step}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)
        self.key, self.episode, self.step = key, episode, step


@dataclass(frozen=True)
class StoreSchema:
    """Fixed per store: camera names and image sizes, state and action dimensions."""

    cameras: dict[str, tuple[int, int]]  # name -> (height, width)
    state_dim: int
    action_dim: int
    fps: float = 20.0

    def step_shapes(self) -> dict[str, tuple[int, ...]]:
        shapes: dict[str, tuple[int, ...]] = {
            f"{IMAGE_PREFIX}{cam}": (h, w, 3) for cam, (h, w) in self.cameras.items()
        }
        shapes.update(state=(self.state_dim,), action=(self.action_dim,), reward=(), is_intervention=(),
                      is_recovery=(), policy_version=(), timestamp=())
        return shapes

    def step_dtype(self, key: str) -> np.dtype:
        return np.dtype(np.uint8) if key.startswith(IMAGE_PREFIX) else STEP_DTYPES[key]

    def to_json(self) -> dict[str, Any]:
        return {"cameras": {k: list(v) for k, v in self.cameras.items()}, "state_dim": self.state_dim,
                "action_dim": self.action_dim, "fps": self.fps}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> StoreSchema:
        return cls(cameras={k: (int(v[0]), int(v[1])) for k, v in d["cameras"].items()},
                   state_dim=int(d["state_dim"]), action_dim=int(d["action_dim"]), fps=float(d["fps"]))


@dataclass
class Episode:
    """One episode in memory: step arrays (time first) and episode metadata."""

    steps: dict[str, np.ndarray]
    task: str
    instruction: str
    success: bool
    source: str
    seed: int = -1
    extra: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.steps["action"]) if "action" in self.steps else 0


def closest(name: str, valid: list[str] | tuple[str, ...]) -> str:
    """' (did you mean X?)' for the closest valid name, or a list of the valid names."""
    match = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.5)
    if match:
        return f" (did you mean '{match[0]}'? valid: {', '.join(valid)})"
    return f" (valid: {', '.join(valid)})"


def validate_episode(episode: Episode, schema: StoreSchema, episode_index: int) -> dict[str, np.ndarray]:
    """Check an episode against the schema and return its step arrays cast to the stored dtypes.

    Raises EpisodeValidationError naming the key, the episode (the index it would get) and the
    first offending step.
    """
    ep = episode_index
    if not isinstance(episode.task, str) or not episode.task:
        raise EpisodeValidationError("task must be a non-empty string", key="task", episode=ep)
    if not isinstance(episode.instruction, str) or not episode.instruction.strip():
        raise EpisodeValidationError("instruction must be a non-empty string", key="instruction", episode=ep)
    if episode.source not in SOURCES:
        raise EpisodeValidationError(f"unknown source '{episode.source}'" + closest(str(episode.source), SOURCES),
                                     key="source", episode=ep)
    if not isinstance(episode.success, (bool, np.bool_)):
        raise EpisodeValidationError(f"success must be a bool, got {type(episode.success).__name__}",
                                     key="success", episode=ep)
    if not isinstance(episode.seed, (int, np.integer)):
        raise EpisodeValidationError(f"seed must be an int, got {type(episode.seed).__name__}",
                                     key="seed", episode=ep)

    shapes = schema.step_shapes()
    unknown = sorted(set(episode.steps) - set(shapes))
    if unknown:
        raise EpisodeValidationError("unknown step key" + closest(unknown[0], sorted(shapes)), key=unknown[0],
                                     episode=ep)
    missing = [k for k in shapes if k not in episode.steps]
    if missing:
        raise EpisodeValidationError(f"missing step key (the schema needs {', '.join(shapes)})",
                                     key=missing[0], episode=ep)
    length = len(np.asarray(episode.steps["action"]))
    if length == 0:
        raise EpisodeValidationError("episode has no steps", key="action", episode=ep)

    out: dict[str, np.ndarray] = {}
    for key, shape in shapes.items():
        value = episode.steps[key]
        if not isinstance(value, np.ndarray):
            value = np.asarray(value)
        if value.dtype == object:
            raise EpisodeValidationError("object arrays are not accepted", key=key, episode=ep)
        if value.shape != (length, *shape):
            raise EpisodeValidationError(f"shape {value.shape}, expected {(length, *shape)} "
                                         f"(time first, {length} steps)", key=key, episode=ep)
        out[key] = _cast(key, value, schema.step_dtype(key), ep)
        if key in _FINITE_KEYS:
            bad = ~np.isfinite(out[key].reshape(length, -1))
            if bad.any():
                step, dim = np.argwhere(bad)[0]
                raise EpisodeValidationError(
                    f"non-finite value {value.reshape(length, -1)[step, dim]} at dim {dim}",
                    key=key, episode=ep, step=int(step))
    return out


def _cast(key: str, value: np.ndarray, target: np.dtype, ep: int) -> np.ndarray:
    if target == np.uint8:
        if value.dtype != np.uint8:
            raise EpisodeValidationError(f"dtype {value.dtype}, expected uint8 images", key=key, episode=ep)
        return value
    accepted = target.kind
    if value.dtype.kind == "u" and accepted == "i":
        pass
    elif value.dtype.kind != accepted and not (accepted == "f" and value.dtype.kind in "iu"):
        raise EpisodeValidationError(f"dtype {value.dtype}, expected {_ACCEPTED_KINDS[accepted]}",
                                     key=key, episode=ep)
    if accepted == "i":
        info = np.iinfo(target)
        if value.size and (value.min() < info.min or value.max() > info.max):
            step = int(np.argwhere((value < info.min) | (value > info.max))[0][0])
            raise EpisodeValidationError(f"value out of {target} range", key=key, episode=ep, step=step)
    return value.astype(target, copy=False)
