"""Shared builders for the real/ tests."""

from __future__ import annotations

import numpy as np

from real.executor import ChunkExecutor, ExecutorConfig, action_changes
from real.safety import JointLimits, SafetyFilter
from real.testing import FakeRobot, SteppedWorker, SyntheticPolicy
from real.worker import FakeClock

A = 6
DT = 0.05


def limits(a: int = A, pos: float = 2.0, vel: float = 3.0, acc: float = 30.0) -> JointLimits:
    return JointLimits(tuple(f"j{i}" for i in range(a)), -np.full(a, pos), np.full(a, pos),
                       np.full(a, vel), np.full(a, acc))


def make(mode: str, delay_ticks=1, horizon: int = 20, chunk_offset: float = 0.0, policy=None,
         **cfg) -> tuple[ChunkExecutor, SyntheticPolicy, SteppedWorker, FakeRobot, FakeClock]:
    clock = FakeClock()
    pol = policy or SyntheticPolicy(A, horizon, DT, chunk_offset=chunk_offset)
    q0 = SyntheticPolicy(A, horizon, DT).curve(0.0)
    robot = FakeRobot(q0, clock)
    safety = SafetyFilter(limits(), DT)
    safety.reset(q0)
    worker = SteppedWorker(pol, delay_ticks, clock)
    ex = ChunkExecutor(worker, robot.observation, robot.send, safety,
                       ExecutorConfig(mode=mode, **{"rate_hz": 1 / DT, **cfg}), clock)
    return ex, pol, worker, robot, clock


def executed(ex: ChunkExecutor) -> dict[int, np.ndarray]:
    """tick -> action the queue gave at that tick (ticks without one are absent)."""
    return {r.tick: r.action for r in ex.records if r.action is not None}


def step_norms(ex: ChunkExecutor) -> tuple[np.ndarray, np.ndarray]:
    """(all per-step action changes, changes at chunk switches) over ticks that had an action."""
    return action_changes(ex.records)
