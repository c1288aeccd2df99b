"""Clocks and the background inference worker used by the chunk executor.

The control loop never calls the policy itself: it hands a request to a worker and polls for the
result once per tick, so a slow policy can never stall the control clock.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from vla.interfaces import GuidanceFn, Observation, Policy

log = logging.getLogger(__name__)


class Clock(Protocol):
    def now(self) -> float: ...

    def sleep_until(self, t: float) -> None: ...


class MonotonicClock:
    """Wall clock for the robot: `time.monotonic`, immune to NTP steps."""

    def now(self) -> float:
        return time.monotonic()

    def sleep_until(self, t: float) -> None:
        delay = t - time.monotonic()
        if delay > 0:
            time.sleep(delay)


class FakeClock:
    """Deterministic clock for tests: time only moves when the loop sleeps or the test advances it."""

    def __init__(self, t0: float = 0.0) -> None:
        self.t = t0

    def now(self) -> float:
        return self.t

    def sleep_until(self, t: float) -> None:
        self.t = max(self.t, t)

    def advance(self, dt: float) -> None:
        self.t += dt


@dataclass
class InferenceRequest:
    request_id: int
    trigger_tick: int  # chunk[i] is meant for tick trigger_tick + 1 + i
    observation: Observation
    prefix: np.ndarray | None  # float32[1, P, A]
    guidance: GuidanceFn | None
    submitted_at: float = 0.0
    meta: dict = field(default_factory=dict)


@dataclass
class InferenceResult:
    request: InferenceRequest
    chunk: np.ndarray | None  # float[1, H, A]
    error: str | None
    latency_s: float


class InferenceWorker(Protocol):
    @property
    def busy(self) -> bool: ...

    @property
    def alive(self) -> bool: ...

    def submit(self, request: InferenceRequest) -> None: ...

    def poll(self) -> InferenceResult | None: ...

    def close(self) -> None: ...


class ThreadWorker:
    """Runs `policy.sample_chunk` on one daemon thread, one request at a time.

    torch and onnxruntime release the GIL inside their kernels, so the control thread keeps its
    rate while the worker computes.
    """

    def __init__(self, policy: Policy, clock: Clock | None = None) -> None:
        self.policy = policy
        self.clock = clock or MonotonicClock()
        self._cv = threading.Condition()
        self._request: InferenceRequest | None = None
        self._result: InferenceResult | None = None
        self._in_flight = False
        self._closed = False
        self._last_error: str | None = None  # a repeated failure logs its traceback once, not per retry
        self._thread = threading.Thread(target=self._loop, name="inference-worker", daemon=True)
        self._thread.start()

    @property
    def busy(self) -> bool:
        with self._cv:
            return self._in_flight

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and not self._closed

    def submit(self, request: InferenceRequest) -> None:
        with self._cv:
            if self._in_flight:
                raise RuntimeError("ThreadWorker.submit while a request is in flight")
            request.submitted_at = self.clock.now()
            self._request, self._in_flight = request, True
            self._cv.notify()

    def poll(self) -> InferenceResult | None:
        with self._cv:
            result, self._result = self._result, None
            if result is not None:
                self._in_flight = False
            return result

    def close(self, timeout: float = 5.0) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify()
        self._thread.join(timeout)

    def _loop(self) -> None:
        while True:
            with self._cv:
                while self._request is None and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                request, self._request = self._request, None
            t0 = self.clock.now()
            try:
                chunk = np.asarray(self.policy.sample_chunk([request.observation], prefix=request.prefix,
                                                            guidance=request.guidance))
                error = None
            except Exception as exc:  # a failing policy must not kill the worker; the executor counts it
                chunk, error = None, f"{type(exc).__name__}: {exc}"
                if error != self._last_error:
                    log.exception("policy.sample_chunk failed")
                self._last_error = error
            else:
                self._last_error = None
            result = InferenceResult(request, chunk, error, self.clock.now() - t0)
            with self._cv:
                self._result = result
