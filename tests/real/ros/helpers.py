"""Helpers shared by the ROS 2 tests."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from real.testing import SyntheticPolicy

# When set (tests/real/ros/soak.py --suite does), the hostile-input tests append one JSON line per
# generated case: {"area", "case", "outcome"}; the soak's report counts the distinct cases from it.
CASE_LOG_ENV = "VLA_HOSTILE_CASE_LOG"


def wait_for(pred: Callable[[], object], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


STOP_TIMEOUT_S = 60.0  # a clean ROS shutdown takes 1-3 s here; room for a loaded CI machine before SIGKILL


def stop_group(proc, timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGINT to a child started with start_new_session (the node and what wraps it), SIGKILL if it lingers."""
    import os
    import signal
    import subprocess

    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def record_case(area: str, case: object, outcome: str) -> None:
    """Log one hostile case and how it ended (`rejected:<reason>`, `limited`, `accepted`, `hold:<kind>`
    ...); a no-op unless CASE_LOG_ENV names a file. `case` is made hashable by its repr."""
    path = os.environ.get(CASE_LOG_ENV)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"area": area, "case": repr(case)[:500], "outcome": outcome}) + "\n")


class Picky(SyntheticPolicy):
    """The synthetic stand-in, failing like a language-conditioned VLA on a blank instruction or
    on a state that is not finite as float32 (what made the node hold for good before the hardening's
    fix)."""

    def sample_chunk(self, obs_batch, prefix=None, guidance=None):
        obs = obs_batch[0]
        if not str(obs["instruction"]).strip():
            raise ValueError("instruction is empty")
        if not np.all(np.isfinite(np.asarray(obs["state"], dtype=np.float32))):
            raise ValueError("state is not finite")
        return super().sample_chunk(obs_batch, prefix, guidance)


def picky_policy(dt: float, action_dim: int, **kw):
    """Policy factory for policy-node configs (`factory: tests.real.ros.helpers:picky_policy`)."""
    return Picky(action_dim=action_dim, dt=dt, **kw)


class OnlyInstruction(SyntheticPolicy):
    """The synthetic stand-in that fails on any instruction but `only`: counts, through the node's
    inference_failures, the chunks inferred for another goal."""

    def __init__(self, only: str, **kw) -> None:
        super().__init__(**kw)
        self.only = only

    def sample_chunk(self, obs_batch, prefix=None, guidance=None):
        if obs_batch[0]["instruction"] != self.only:
            raise ValueError(f"inferred for {obs_batch[0]['instruction']!r}, the robot said {self.only!r}")
        return super().sample_chunk(obs_batch, prefix, guidance)


def only_instruction_policy(dt: float, action_dim: int, **kw):
    """Policy factory for policy-node configs (`factory: tests.real.ros.helpers:only_instruction_policy`)."""
    return OnlyInstruction(action_dim=action_dim, dt=dt, **kw)


class LanguageConditioned(SyntheticPolicy):
    """The synthetic stand-in, language-conditioned as the VLA is: it embeds its observation's instruction
    with the real all-MiniLM-L6-v2 encoder (its own, not the process-wide one) inside `sample_chunk`, and
    appends one JSON line per chunk to `chunk_log`: the monotonic time it was returned, the instruction,
    and whether the embedding was cached (false: this inference call loaded the model or ran it). The
    `known` instructions are preloaded, as a checkpoint's instruction table is (any unit vector will do:
    the synthetic policy ignores it), so the model is not loaded until an unseen instruction needs it."""

    def __init__(self, chunk_log: str, known: Sequence[str] = (), **kw) -> None:
        super().__init__(**kw)
        from vla.policy.language import EMBED_DIM, InstructionEncoder

        self.language = InstructionEncoder()
        self.language.preload({t: np.full(EMBED_DIM, EMBED_DIM ** -0.5, np.float32) for t in known})
        self.chunk_log = chunk_log

    def sample_chunk(self, obs_batch, prefix=None, guidance=None):
        text = obs_batch[0]["instruction"]
        cached = text in self.language.cached()
        t0 = time.monotonic()
        self.language.encode([text])
        out = super().sample_chunk(obs_batch, prefix, guidance)
        with open(self.chunk_log, "a") as f:
            f.write(json.dumps({"t": time.monotonic(), "took": time.monotonic() - t0, "instruction": text,
                                "cached": cached}) + "\n")
        return out


def language_policy(dt: float, action_dim: int, **kw):
    """Policy factory for policy-node configs (`factory: tests.real.ros.helpers:language_policy`)."""
    return LanguageConditioned(action_dim=action_dim, dt=dt, **kw)


@contextmanager
def in_process_bridge(**config: object) -> Iterator[object]:
    """A BridgeNode on a private ROS context, its threads not started (a test calls its tick and callbacks),
    on a random domain of this machine; everything restored afterwards."""
    import random

    import rclpy

    from real.ros.bridge_node import BridgeConfig, BridgeNode

    saved = {k: os.environ.get(k) for k in ("ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_DOMAIN_ID")}
    os.environ.update(ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
                      ROS_DOMAIN_ID=str(random.SystemRandom().randint(201, 230)))
    ctx = rclpy.context.Context()
    rclpy.init(context=ctx)
    b = None
    try:
        b = BridgeNode(BridgeConfig(**config), context=ctx)
        yield b
    finally:
        if b is not None:
            b.node.destroy_node()
            b.env.close()
        rclpy.shutdown(context=ctx)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
