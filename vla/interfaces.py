"""The stack's small interfaces (see docs/architecture.md). Everything else is built on these.

- Observation: what an environment or a robot gives the policy at one step.
- Policy: inference only; `sample_chunk` returns an action chunk per batch element.
- Intervener: a scripted expert in simulation or a person with a device on a real arm.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NotRequired, Protocol, TypedDict, runtime_checkable

import numpy as np


class Observation(TypedDict):
    """One step's observation. Images are uint8 HxWx3 per camera (may be empty in state-only mode)."""

    images: dict[str, np.ndarray]
    state: np.ndarray  # float32[D]
    instruction: str
    timestamp: float
    # Robots only, optional: measured joint velocities, and the command the arm executes from this
    # observation on (set by the chunk executor in its aligned modes). A joint-space adapter that
    # predicts the arm's motion (real.joint_vla) starts from them instead of from rest.
    velocity: NotRequired[np.ndarray]  # float32[D]
    command: NotRequired[np.ndarray]  # float32[A]
    # Robots with a pose estimator, optional: world-frame object poses (position, quaternion xyzw), from
    # which a joint-space adapter computes the object part of a state policy's input.
    objects: NotRequired[np.ndarray]  # float64[K, 7]


# A guidance hook sees the current estimate of the clean chunk (action units, float[B, H, A]) and
# the flow time tau in [0, 1] (1 = clean) and returns the desired change of that estimate
# (same shape). The sampler turns it into a velocity correction (inference-time RTC, ReGuide).
GuidanceFn = Callable[[np.ndarray, float], np.ndarray]


@runtime_checkable
class Policy(Protocol):
    """Inference protocol shared by torch and ONNX policies, sim evaluation and the robot executor."""

    def sample_chunk(self, obs_batch: Sequence[Observation], prefix: np.ndarray | None = None,
                     guidance: GuidanceFn | None = None) -> np.ndarray:
        """Return float32[B, H, A] actions. `prefix` float32[B, P, A] (P < H): actions already
        committed for execution while inference runs; the chunk's first P actions continue them."""
        ...

    def reset(self) -> None: ...


@runtime_checkable
class Intervener(Protocol):
    """Takes over from the policy when failure is imminent (RaC, HABC, HG-DAgger)."""

    def wants_control(self, obs: Observation, info: dict[str, Any]) -> bool: ...

    def act(self, obs: Observation, info: dict[str, Any]) -> tuple[np.ndarray, bool]:
        """Return (action, is_recovery): `is_recovery` marks RaC rewind steps."""
        ...

    def reset(self) -> None: ...
