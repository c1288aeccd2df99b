"""STAND-INS for tests and benchmarks: a synthetic smooth policy, a stepped worker, a fake robot.

`SyntheticPolicy` is NOT a learned policy. It implements the `vla.interfaces.Policy` protocol so
the executor, the safety layer and the ROS node can be tested before the real VLA exists. It
drives the joints around a known smooth closed curve whose phase it reads back from the observed
joint state (so it is a state-feedback policy, like a real one), optionally adds a per-chunk
offset (a different "mode" per sample, which is what makes chunk boundaries jump), honours
`prefix` (the chunk's first P actions are the prefix, then it blends smoothly from the prefix's
end) and `guidance` (applied once to the clean chunk), and can sleep to emulate inference time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from real.worker import Clock, InferenceRequest, InferenceResult
from vla.interfaces import GuidanceFn, Observation, Policy


class SyntheticPolicy:
    """Closed-curve tracker in joint space; chunk[i] is the target for `(i + 1) * dt` after the obs."""

    def __init__(self, action_dim: int = 6, horizon: int = 20, dt: float = 0.05, period_s: float = 4.0,
                 radius: float = 0.3, center: Sequence[float] | None = None, chunk_offset: float = 0.0,
                 blend_s: float = 0.25, delay_s: float | Callable[[], float] = 0.0, seed: int = 0,
                 sleep: Callable[[float], None] = time.sleep, nonfinite_every: int = 0) -> None:
        if action_dim < 2:
            raise ValueError(f"SyntheticPolicy needs action_dim >= 2 (phase lives in joints 0, 1), got {action_dim}")
        if horizon < 1 or dt <= 0 or period_s <= 0:
            raise ValueError("horizon must be >= 1, dt and period_s > 0")
        self.action_dim, self.horizon, self.dt = action_dim, horizon, dt
        self.omega = 2 * np.pi / period_s
        self.radius = radius
        self.center = np.zeros(action_dim) if center is None else np.asarray(center, dtype=np.float64)
        self.chunk_offset, self.blend_s = chunk_offset, blend_s
        self.delay_s, self.sleep, self.seed = delay_s, sleep, seed
        self.nonfinite_every = nonfinite_every  # every n-th chunk carries a NaN (for safety tests)
        self.calls: list[dict] = []
        self.reset()

    def reset(self) -> None:
        self._rng = np.random.default_rng(self.seed)
        self.calls = []

    # The curve: joints 0/1 go round a circle (phase = angle), the others oscillate at harmonics.
    def curve(self, s: np.ndarray) -> np.ndarray:
        s = np.asarray(s, dtype=np.float64)[..., None]
        j = np.arange(self.action_dim)
        out = 0.5 * self.radius * np.sin((1 + j % 3) * self.omega * s + j)
        out[..., 0] = self.radius * np.cos(self.omega * s[..., 0])
        out[..., 1] = self.radius * np.sin(self.omega * s[..., 0])
        return out + self.center

    def phase(self, state: np.ndarray) -> float:
        x, y = state[0] - self.center[0], state[1] - self.center[1]
        return float(np.arctan2(y, x) / self.omega)

    def sample_chunk(self, obs_batch: Sequence[Observation], prefix: np.ndarray | None = None,
                     guidance: GuidanceFn | None = None) -> np.ndarray:
        if len(obs_batch) == 0:
            raise ValueError("obs_batch is empty")
        delay = self.delay_s() if callable(self.delay_s) else self.delay_s
        if delay > 0:
            self.sleep(delay)
        b, h, a = len(obs_batch), self.horizon, self.action_dim
        if prefix is not None:
            prefix = np.asarray(prefix, dtype=np.float64)
            if prefix.ndim != 3 or prefix.shape[0] != b or prefix.shape[2] != a or prefix.shape[1] >= h:
                raise ValueError(f"prefix shape {prefix.shape} must be ({b}, P < {h}, {a})")
        out = np.empty((b, h, a))
        steps = np.arange(1, h + 1) * self.dt
        for n, obs in enumerate(obs_batch):
            state = np.asarray(obs["state"], dtype=np.float64)
            if state.shape[0] < a:
                raise ValueError(f"observation state has {state.shape[0]} dims, policy needs {a}")
            offset = self.chunk_offset * self._rng.uniform(-1, 1, size=a)
            p = 0 if prefix is None else prefix.shape[1]
            if p == 0:
                out[n] = self.curve(self.phase(state) + steps) + offset
            else:
                out[n, :p] = prefix[n]
                s_p = self.phase(prefix[n, -1])
                err = prefix[n, -1] - self.curve(s_p)
                blend = np.exp(-np.arange(1, h - p + 1) * self.dt / self.blend_s)[:, None]
                out[n, p:] = self.curve(s_p + steps[: h - p]) + err * blend + offset * (1 - blend)
        if guidance is not None:
            out = out + np.asarray(guidance(out.copy(), 1.0))
        self.calls.append({"state": np.asarray(obs_batch[0]["state"]).copy(),
                           "prefix": None if prefix is None else prefix.copy(), "guided": guidance is not None})
        if self.nonfinite_every and len(self.calls) % self.nonfinite_every == 0:
            out[:, h // 2, 0] = np.nan
        return out.astype(np.float32)


class SteppedWorker:
    """Deterministic worker for tests: runs the policy at submit, releases the result on the
    `delay_ticks`-th poll (the executor polls once per tick), so the delay in ticks is exact."""

    def __init__(self, policy: Policy, delay_ticks: int | Callable[[int], int] = 1,
                 clock: Clock | None = None) -> None:
        self.policy, self.delay_ticks, self.clock = policy, delay_ticks, clock
        self.alive_flag = True
        self.hang = False  # never deliver (dead-inference tests)
        self._pending: InferenceResult | None = None
        self._polls_left = 0
        self.requests: list[InferenceRequest] = []
        self.results: list[InferenceResult] = []

    @property
    def busy(self) -> bool:
        return self._pending is not None

    @property
    def alive(self) -> bool:
        return self.alive_flag

    def submit(self, request: InferenceRequest) -> None:
        if self._pending is not None:
            raise RuntimeError("SteppedWorker.submit while a request is in flight")
        request.submitted_at = self.clock.now() if self.clock else 0.0
        self.requests.append(request)
        try:
            chunk = self.policy.sample_chunk([request.observation], prefix=request.prefix,
                                             guidance=request.guidance)
            result = InferenceResult(request, np.asarray(chunk), None, 0.0)
        except Exception as exc:
            result = InferenceResult(request, None, f"{type(exc).__name__}: {exc}", 0.0)
        self._pending = result
        self.results.append(result)
        d = self.delay_ticks(request.request_id) if callable(self.delay_ticks) else self.delay_ticks
        self._polls_left = max(1, d)

    def poll(self) -> InferenceResult | None:
        if self._pending is None or self.hang:
            return None
        self._polls_left -= 1
        if self._polls_left > 0:
            return None
        result, self._pending = self._pending, None
        return result

    def close(self) -> None:
        self.alive_flag = False


class FakeRobot:
    """Perfect position tracking: the state is the last command, stamped with the executor's clock."""

    def __init__(self, q0: np.ndarray, clock: Clock) -> None:
        self.q = np.asarray(q0, dtype=np.float64).copy()
        self.clock = clock
        self.frozen_at: float | None = None  # set to stop the observation stream
        self.commands: list[np.ndarray] = []

    def send(self, command: np.ndarray) -> None:
        self.commands.append(np.array(command, copy=True))
        self.q = np.array(command, dtype=np.float64)

    def observation(self) -> Observation:
        ts = self.frozen_at if self.frozen_at is not None else self.clock.now()
        return {"images": {}, "state": self.q.astype(np.float32), "instruction": "trace the curve",
                "timestamp": ts}
