"""Asynchronous action-chunk executor: fixed-rate control clock, background inference, four modes.

Modes (`ExecutorConfig.mode`):

- `sync`: when the queue is empty, infer (the robot holds meanwhile), then execute the chunk (its
  first `sync_action_steps` actions, like the simulator's evaluator with `n_action_steps`).
- `naive_async`: infer while executing; when a chunk arrives it *replaces* the queue and its first
  action runs at once, although it was computed for the observation taken `d` ticks earlier
  (the replace-on-arrival scheme of LeRobot's async client, SmolVLA, arXiv 2506.01844).
- `aligned` (ours): trigger when the remaining actions fall to `d_hat + margin`, where `d_hat` is
  a high percentile of recently measured inference delays in ticks; hand the policy as `prefix` the
  queued actions that will run while it computes; on arrival drop the chunk's actions whose tick
  has passed, keep the committed prefix, continue with the new chunk (needs a policy trained with
  random clean action prefixes, i.e. training-time real-time chunking: `policy.prefix_prob`).
- `ensemble`: infer whenever the worker is free (no prefix); every arrived chunk keeps its aligned
  predictions and the action for a tick is their mean weighted exp(-`ensemble_rate` x age)
  (`chunk_queue.TickEnsemble`: ACT's temporal ensemble, arXiv 2304.13705, as the simulator's
  evaluator runs it with `temporal_ensemble=RATE`).
- `rtc`: same alignment as `aligned`, triggered `rtc_soft_fraction` of a chunk earlier; the policy gets no
  prefix; instead a guidance hook pulls the new chunk towards the previous one with the soft mask
  of inference-time real-time chunking (Black et al. 2025, arXiv 2506.07339, eq. 5): weight 1 on
  the actions that run during the delay, exponentially decaying weights over the rest of the
  overlap, 0 beyond it.

Tick k: poll the worker (merge an arrived chunk), pop the action for tick k, pass it through the
safety layer, send it, then maybe trigger inference with the observation now (chunk[i] is meant
for tick k + 1 + i). Nothing here imports ROS.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from real.chunk_queue import ChunkQueue, TickEnsemble, align_chunk, blend_switch
from real.safety import SafetyFilter
from real.worker import Clock, InferenceRequest, InferenceResult, InferenceWorker, MonotonicClock
from vla.interfaces import GuidanceFn, Observation
from vla.policy.ensemble import valid_rate

log = logging.getLogger(__name__)

MODES = ("sync", "naive_async", "aligned", "rtc", "ensemble")


@dataclass
class ExecutorConfig:
    mode: str = "aligned"
    rate_hz: float = 20.0
    trigger_threshold: int | None = None  # aligned/rtc: remaining actions that trigger; None = auto
    sync_action_steps: int | None = None  # sync: actions executed per chunk (None = all)
    naive_threshold_fraction: float = 0.5  # naive_async triggers at this fraction of the chunk
    latency_window: int = 20  # recent inference delays used for the estimate
    latency_percentile: float = 95.0
    initial_latency_ticks: int = 2  # delay estimate before anything was measured
    margin_ticks: int = 1  # slack added to the estimated delay
    rtc_soft_fraction: float = 0.25  # rtc: extra overlap (fraction of the chunk) for the soft-masked blend
    # aligned / rtc: the first actions after the committed prefix ramp from the previous plan to the new
    # chunk over this many ticks (`blend_switch`); 0 = switch at once
    blend_ticks: int = 0
    ensemble_rate: float = 0.3  # ensemble: weight exp(-rate * age in ticks) on each chunk's prediction
    max_observation_age_s: float = 0.25  # stale-observation watchdog
    inference_timeout_s: float = 2.0  # no chunk this long after a request -> hold (inference_timeout)
    max_consecutive_failures: int = 3  # failed inferences in a row -> hold (inference_failing)
    failure_retry_s: float = 0.5  # while failing: retry at most this often, each on a fresh observation
    late_tick_s: float = 0.005  # a tick starting later than this counts as a missed deadline (stats)
    history: int = 20_000  # tick records kept for diagnostics (~10 MB)
    realtime_priority: int | None = None  # SCHED_FIFO priority of the control thread (needs CAP_SYS_NICE)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"executor mode must be one of {MODES}, got {self.mode!r}")
        if not (0 < self.rate_hz <= 1000):
            raise ValueError(f"rate_hz must be in (0, 1000], got {self.rate_hz}")
        if not 0 < self.naive_threshold_fraction < 1:
            raise ValueError(f"naive_threshold_fraction must be in (0, 1), got {self.naive_threshold_fraction}")
        if self.sync_action_steps is not None and self.sync_action_steps < 1:
            raise ValueError(f"sync_action_steps must be >= 1, got {self.sync_action_steps}")
        if self.trigger_threshold is not None and self.trigger_threshold < 1:
            raise ValueError(f"trigger_threshold must be >= 1, got {self.trigger_threshold}")
        for name in ("latency_window", "initial_latency_ticks"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0 <= self.rtc_soft_fraction < 1:
            raise ValueError(f"rtc_soft_fraction must be in [0, 1), got {self.rtc_soft_fraction}")
        if not valid_rate(self.ensemble_rate):
            raise ValueError(f"ensemble_rate must be a finite number, got {self.ensemble_rate!r}")
        if self.blend_ticks < 0:
            raise ValueError(f"blend_ticks must be >= 0, got {self.blend_ticks}")
        if self.margin_ticks < 0 or not 0 < self.latency_percentile <= 100:
            raise ValueError("margin_ticks must be >= 0 and latency_percentile in (0, 100]")
        if self.max_consecutive_failures < 1 or not self.failure_retry_s >= 0 or not self.late_tick_s > 0:
            raise ValueError("max_consecutive_failures must be >= 1, failure_retry_s >= 0 and late_tick_s > 0")


@dataclass
class TickRecord:
    tick: int
    scheduled: float
    started: float
    action: np.ndarray | None  # what the queue gave (before safety)
    command: np.ndarray  # what was sent
    chunk_id: int  # -1 when starved
    starved: bool  # no action although a chunk had already arrived once
    hold: str | None  # safety hold kind, if any
    queue_depth: int


def action_changes(records: list[TickRecord]) -> tuple[np.ndarray, np.ndarray]:
    """(every per-step action change, the changes at chunk switches) over ticks that sent an action:
    the boundary-jump metric of the tests and the executor benchmark."""
    recs = [r for r in records if r.action is not None]
    steps, switches = [], []
    for prev, cur in pairwise(recs):
        d = float(np.linalg.norm(cur.action - prev.action))
        steps.append(d)
        if cur.chunk_id != prev.chunk_id:
            switches.append(d)
    return np.asarray(steps), np.asarray(switches)


def rtc_weights(horizon: int, frozen: int, overlap: int) -> np.ndarray:
    """Soft mask of inference-time RTC (arXiv 2506.07339, eq. 5) over a new chunk of `horizon` actions.

    `frozen` = actions that run during the inference delay (weight 1), `overlap` = actions of the
    previous chunk that the new one overlaps (weights decay to 0 at `overlap`).
    """
    if not 0 <= frozen <= overlap <= horizon:
        raise ValueError(f"rtc_weights needs 0 <= frozen <= overlap <= horizon, got {frozen}, {overlap}, {horizon}")
    i = np.arange(horizon)
    w = np.zeros(horizon)
    w[:frozen] = 1.0
    soft = (i >= frozen) & (i < overlap)
    c = (overlap - i[soft]) / (overlap - frozen + 1)
    w[soft] = c * (np.exp(c) - 1) / (math.e - 1)
    return w


def rtc_guidance(previous: np.ndarray, horizon: int, frozen: int) -> GuidanceFn:
    """Guidance hook: desired change of the clean-chunk estimate = W * (previous - estimate).

    `previous` float[P_old, A] are the old chunk's actions for the new chunk's first ticks.
    """
    overlap = min(len(previous), horizon)
    w = rtc_weights(horizon, min(frozen, overlap), overlap)[None, :, None]
    target = np.zeros((1, horizon, previous.shape[1]))
    target[0, :overlap] = previous[:overlap]

    def guidance(estimate: np.ndarray, tau: float) -> np.ndarray:
        return w * (target - estimate)

    return guidance


class ChunkExecutor:
    """Runs a policy's action chunks on a robot at a fixed rate; see module docstring."""

    def __init__(self, worker: InferenceWorker, get_observation: Callable[[], Observation | None],
                 send_command: Callable[[np.ndarray], None], safety: SafetyFilter,
                 config: ExecutorConfig | None = None, clock: Clock | None = None) -> None:
        self.cfg = config or ExecutorConfig()
        if abs(safety.dt - 1.0 / self.cfg.rate_hz) > 1e-9:
            raise ValueError(f"safety dt {safety.dt} != 1 / rate_hz {1.0 / self.cfg.rate_hz}")
        self.worker, self.get_observation, self.send_command = worker, get_observation, send_command
        self.safety, self.clock = safety, clock or MonotonicClock()
        self.period = 1.0 / self.cfg.rate_hz
        self.action_dim = len(safety.limits.names)
        self.queue: ChunkQueue | TickEnsemble = (
            TickEnsemble(self.action_dim, self.cfg.ensemble_rate) if self.cfg.mode == "ensemble"
            else ChunkQueue(self.action_dim))
        self.records: deque[TickRecord] = deque(maxlen=self.cfg.history)
        self.latencies_ticks: deque[int] = deque(maxlen=self.cfg.latency_window)
        self.latencies_s: deque[float] = deque(maxlen=self.cfg.latency_window)
        self.chunk_len: int | None = None
        self.n_chunks = self.n_dropped = self.n_failures = self.n_overruns = 0
        self._consecutive_failures = 0
        self._next_request_id = 0
        self._pending: InferenceRequest | None = None
        self._first_chunk_seen = False
        self.last_request: InferenceRequest | None = None  # for tests and diagnostics
        # Recovery from failing inference: the hold stops new requests, so without retries one bad
        # observation would hold the robot until a restart. Retries use observations newer than the
        # one that failed, at most every failure_retry_s.
        self.last_inference_error: str | None = None
        self._failed_obs_stamp = -math.inf
        self._last_retry = -math.inf
        self.n_retries = 0
        # Hold episodes (routine `starved` ticks excluded): entered / recovered, for diagnostics.
        self.n_holds_entered = self.n_holds_recovered = self.n_late = self.n_truncated = 0
        self.holds_by_kind: dict[str, int] = {}
        self._hold_state: str | None = None
        self._stats_lock = threading.Lock()  # stats() may run on another thread (ROS diagnostics timer)
        # A hold from outside (the lifecycle node while inactive), set from any thread; None to follow.
        self.external_hold: tuple[str, str] | None = None
        # An extra check of each observation beyond the built-in ones (the policy node's: joint states a
        # real arm cannot be in); (kind, detail) holds the robot for that tick, as a stale one does.
        self.check_observation: Callable[[Observation], tuple[str, str] | None] | None = None
        # Observers on the control thread (the deployment recorder): they must return at once.
        self.on_tick: Callable[[TickRecord], None] | None = None
        self.on_chunk: Callable[[int, int, np.ndarray], None] | None = None  # (tick, chunk id, chunk as produced)

    # ---- delay estimate -------------------------------------------------------------------------
    def delay_estimate_ticks(self) -> int:
        """High percentile of recent inference delays, in ticks (>= 1)."""
        if not self.latencies_ticks:
            return self.cfg.initial_latency_ticks
        return max(1, math.ceil(np.percentile(np.asarray(self.latencies_ticks), self.cfg.latency_percentile)))

    def trigger_threshold(self) -> int:
        """Remaining actions at which inference starts."""
        h = self.chunk_len
        if self.cfg.mode == "sync":
            return 0
        if self.cfg.mode == "naive_async":
            return 0 if h is None else max(1, int(h * self.cfg.naive_threshold_fraction))
        if self.cfg.mode == "ensemble":  # a new prediction as often as the worker can give one
            return h if h is not None else self.cfg.initial_latency_ticks
        if self.cfg.trigger_threshold is not None:
            return self.cfg.trigger_threshold
        threshold = self.delay_estimate_ticks() + self.cfg.margin_ticks
        if self.cfg.mode == "rtc" and h is not None:
            # RTC blends over the overlap beyond the frozen actions (H - s - d in the paper's terms):
            # triggering at exactly the delay would leave no room for the soft mask.
            threshold = min(threshold + int(h * self.cfg.rtc_soft_fraction), h - 1)
        return threshold

    def prefix_length(self, remaining: int) -> int:
        """aligned/rtc: actions that will (probably) run before the new chunk can take over."""
        n = min(remaining, self.delay_estimate_ticks() - 1 + self.cfg.margin_ticks)
        # The protocol wants P < H: the new chunk must contribute at least one action of its own.
        return n if self.chunk_len is None else min(n, self.chunk_len - 1)

    # ---- one control tick -----------------------------------------------------------------------
    def tick(self, k: int, scheduled: float | None = None) -> TickRecord:
        now = self.clock.now()
        self._poll(k)
        external = self.external_hold
        if external is not None:  # a plan made before the hold is stale after it
            self.queue.drop_before(self.queue.end_tick)
        obs = self.get_observation()
        obs_hold = self._observation_hold(obs, now)
        hold = external or self._inference_hold(now) or obs_hold
        popped = self.queue.pop(k)
        action, chunk_id = popped if popped is not None else (None, -1)
        command = self.safety.step(action, k, hold)
        if not (np.all(np.isfinite(command)) and command.shape == (self.action_dim,)):
            raise AssertionError("safety layer emitted an invalid command")  # unreachable by design
        self.send_command(command)
        rec = TickRecord(k, now if scheduled is None else scheduled, now, action, command, chunk_id,
                         popped is None and self._first_chunk_seen, self.safety.hold_kind, len(self.queue))
        with self._stats_lock:
            self.records.append(rec)
            self._count_hold(rec, now if scheduled is None else scheduled, now)
        if self.on_tick is not None:
            self.on_tick(rec)
        if hold is None:
            self._maybe_trigger(k, obs, command)
        elif hold[0] == "inference_failing" and obs_hold is None and self._retry_due(obs, now):
            self._last_retry = now
            self.n_retries += 1
            self._maybe_trigger(k, obs, command)
        return rec

    def _inference_hold(self, now: float) -> tuple[str, str] | None:
        if not self.worker.alive:
            return ("dead_inference", "inference worker is not running")
        if self._consecutive_failures >= self.cfg.max_consecutive_failures:
            return ("inference_failing", f"{self._consecutive_failures} consecutive inference failures, "
                                         f"retrying on fresh observations; last: {self.last_inference_error}")
        if self._pending is not None and now - self._pending.submitted_at > self.cfg.inference_timeout_s:
            return ("inference_timeout", f"no chunk for {now - self._pending.submitted_at:.2f} s")
        return None

    def _observation_hold(self, obs: Observation | None, now: float) -> tuple[str, str] | None:
        if obs is None:
            return ("stale_observation", "no observation yet")
        try:
            age = now - float(obs["timestamp"])
            state = np.asarray(obs["state"], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            return ("invalid_observation", f"{type(exc).__name__}: {exc}")
        if not age <= self.cfg.max_observation_age_s:  # also catches NaN timestamps
            return ("stale_observation", f"observation is {age:.3f} s old")
        if age < -self.cfg.max_observation_age_s:  # not from this clock; it would also outlive every retry
            return ("invalid_observation", f"observation stamped {-age:.3f} s in the future")
        if state.ndim != 1 or not np.all(np.isfinite(state)) or not isinstance(obs.get("instruction", ""), str):
            return ("invalid_observation", "state not a finite float32 vector or instruction not a string")
        return None if self.check_observation is None else self.check_observation(obs)

    def _retry_due(self, obs: Observation, now: float) -> bool:
        return (float(obs["timestamp"]) > self._failed_obs_stamp
                and now - self._last_retry >= self.cfg.failure_retry_s)

    def _count_hold(self, rec: TickRecord, scheduled: float, now: float) -> None:
        """Hold episodes and missed deadlines (call with _stats_lock held)."""
        self.n_late += now - scheduled > self.cfg.late_tick_s
        state = rec.hold if rec.hold not in (None, "starved") else None
        if state is not None and state != self._hold_state:
            self.holds_by_kind[state] = self.holds_by_kind.get(state, 0) + 1
            self.n_holds_entered += self._hold_state is None
        elif state is None and self._hold_state is not None:
            self.n_holds_recovered += 1
        self._hold_state = state

    def _maybe_trigger(self, k: int, obs: Observation, command: np.ndarray) -> None:
        if self._pending is not None or self.worker.busy:
            return
        remaining = self.queue.remaining_after(k)
        if remaining > self.trigger_threshold():
            return
        if self.cfg.mode in ("aligned", "rtc"):
            # The observation was read before this tick's command went out, so the arm runs that
            # command before the prefix: a policy that predicts the arm's motion needs it.
            obs = {**obs, "command": command.astype(np.float32)}
        prefix = guidance = None
        n_prefix = 0
        if self.cfg.mode in ("aligned", "rtc") and remaining > 0:
            n_prefix = self.prefix_length(remaining)
            if self.cfg.mode == "aligned" and n_prefix > 0:
                prefix = self.queue.actions_between(k + 1, k + 1 + n_prefix).astype(np.float32)[None]
            elif self.cfg.mode == "rtc" and self.chunk_len is not None:
                guidance = rtc_guidance(self.queue.actions_between(k + 1, k + 1 + remaining),
                                        self.chunk_len, n_prefix)
        req = InferenceRequest(self._next_request_id, k, obs, prefix, guidance, meta={"n_prefix": n_prefix})
        self._next_request_id += 1
        self.worker.submit(req)
        self._pending = self.last_request = req

    def _poll(self, k: int) -> None:
        result = self.worker.poll()
        if result is None:
            return
        self._pending = None
        chunk = self._validated_chunk(result)
        if chunk is None:
            return
        req = result.request
        with self._stats_lock:
            self.latencies_ticks.append(k - req.trigger_tick)
            self.latencies_s.append(result.latency_s)
        self.chunk_len = chunk.shape[0]
        self.n_chunks += 1
        if self.on_chunk is not None:
            self.on_chunk(k, req.request_id, chunk)
        self._first_chunk_seen = True
        if self.cfg.mode == "sync" and self.cfg.sync_action_steps is not None:
            chunk = chunk[: self.cfg.sync_action_steps]
        if self.cfg.mode in ("sync", "naive_async"):
            self.queue.replace(chunk, first_tick=k, chunk_id=req.request_id)
            return
        aligned = align_chunk(chunk, req.trigger_tick + 1, k)
        self.n_dropped += aligned.n_dropped
        if isinstance(self.queue, TickEnsemble):
            self.queue.add(aligned.kept, aligned.first_tick, req.request_id, origin_tick=req.trigger_tick + 1)
            return
        keep_until = req.trigger_tick + 1 + req.meta["n_prefix"]
        kept = aligned.kept
        if self.cfg.blend_ticks and len(kept):
            switch = max(keep_until, aligned.first_tick)  # the new chunk's first action after the prefix
            i = switch - aligned.first_tick
            old = self.queue.actions_between(switch, switch + self.cfg.blend_ticks)
            kept = np.concatenate([kept[:i], blend_switch(old, kept[i:], self.cfg.blend_ticks)])
        self.queue.merge(kept, aligned.first_tick, req.request_id, keep_until)

    def _validated_chunk(self, result: InferenceResult) -> np.ndarray | None:
        error = result.error
        chunk = None
        if error is None:
            c = np.asarray(result.chunk)
            if c.ndim != 3 or c.shape[0] != 1 or c.shape[2] != self.action_dim or c.shape[1] < 1:
                error = f"policy returned shape {c.shape}, expected (1, H, {self.action_dim})"
            elif c.dtype.kind != "f":
                error = f"policy returned dtype {c.dtype}, expected floating point"
            else:
                chunk, error = self._valid_head(c[0].astype(np.float64))
        if error is not None:
            self.n_failures += 1
            self._consecutive_failures += 1
            self.last_inference_error = error
            with contextlib.suppress(KeyError, TypeError, ValueError):
                self._failed_obs_stamp = float(result.request.observation["timestamp"])
            log.error("inference request %d failed: %s", result.request.request_id, error)
            return None
        self._consecutive_failures = 0
        return chunk

    def _valid_head(self, chunk: np.ndarray) -> tuple[np.ndarray | None, str | None]:
        """The chunk up to its first action the safety layer would refuse (non-finite, outside the
        position limits). Queued actions become the next request's prefix (aligned) or guidance
        target (rtc) as "what runs meanwhile"; a refused one never runs, and a NaN or 1e30 there
        makes every later chunk bad: a hold that never clears."""
        n = self.safety.valid_head(chunk)
        if n == len(chunk):
            return chunk, None
        self.n_truncated += 1
        log.warning("policy chunk has an invalid action (non-finite or outside the position limits) at index "
                    "%d of %d: cut there", n, len(chunk))
        return (chunk[:n], None) if n > 0 else (None, "policy chunk starts with an invalid action "
                                                      "(non-finite or outside the position limits)")

    # ---- fixed-rate loop ------------------------------------------------------------------------
    def run(self, n_ticks: int | None = None, should_stop: Callable[[], bool] | None = None) -> None:
        """Tick at `rate_hz` until `n_ticks` ticks ran or `should_stop()` is true.

        A late loop skips the ticks it missed (their actions are dropped) instead of bunching them,
        so tick k always runs at t0 + k / f and chunk alignment stays true to wall time.
        """
        if not self.safety.initialised:
            raise RuntimeError("initialise the safety layer with the robot's position (safety.reset) first")
        if self.cfg.realtime_priority is not None:
            self._set_realtime(self.cfg.realtime_priority)
        t0 = self.clock.now()
        k = 0
        while (n_ticks is None or k < n_ticks) and not (should_stop and should_stop()):
            target = t0 + k * self.period
            self.clock.sleep_until(target)
            late = int((self.clock.now() - target) // self.period)
            if late > 0:
                self.n_overruns += late
                k += late
                target += late * self.period
                if n_ticks is not None and k >= n_ticks:
                    break
            self.tick(k, scheduled=target)
            k += 1

    @staticmethod
    def _set_realtime(priority: int) -> None:
        # pid 0 = the calling thread only: the inference worker keeps normal priority, so a busy
        # policy cannot starve the machine, while the (mostly sleeping) control clock preempts it.
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        except (PermissionError, OSError, AttributeError) as exc:
            log.warning("could not give the control thread SCHED_FIFO priority %d (%s); running without",
                        priority, exc)

    # ---- diagnostics ----------------------------------------------------------------------------
    def stats(self, window: int | None = None) -> dict[str, float]:
        """Diagnostics over the last `window` ticks (all kept ticks if None)."""
        with self._stats_lock:
            recs = list(self.records)[-window:] if window else list(self.records)
            lat = np.asarray(self.latencies_s) if self.latencies_s else np.full(1, np.nan)
            delay_estimate = self.delay_estimate_ticks()
        jitter = np.array([r.started - r.scheduled for r in recs]) if recs else np.zeros(1)
        return {
            "ticks": float(len(recs)),
            "starved_ticks": float(sum(r.starved for r in recs)),
            "hold_ticks": float(sum(r.hold is not None for r in recs)),
            "queue_depth": float(len(self.queue)),
            "chunks": float(self.n_chunks),
            "dropped_actions": float(self.n_dropped),
            "inference_failures": float(self.n_failures),
            "overrun_ticks": float(self.n_overruns),
            "latency_p50_s": float(np.percentile(lat, 50)),
            "latency_p95_s": float(np.percentile(lat, 95)),
            "delay_estimate_ticks": float(delay_estimate),
            "jitter_p50_s": float(np.percentile(jitter, 50)),
            "jitter_p99_s": float(np.percentile(jitter, 99)),
            "jitter_max_s": float(jitter.max()),
            "safety_violations": float(self.safety.n_violations),
            "holds_entered": float(self.n_holds_entered),
            "holds_recovered": float(self.n_holds_recovered),
            "inference_retries": float(self.n_retries),
            "truncated_chunks": float(self.n_truncated),
            "late_ticks": float(self.n_late),
        }
