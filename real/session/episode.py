"""One supervised episode: the policy acts, the supervisor may take over at any step; the whole
episode is returned for a single commit to the store."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from vla.data.builder import EpisodeBuilder
from vla.data.schema import Episode


@dataclass
class EpisodeRecord:
    seed: int
    success: bool
    length: int
    source: str
    takeovers: int
    intervention_steps: int
    recovery_steps: int
    outcome: str | None = None  # the person's end mark, if any
    index: int = -1  # index in the store, -1 if not stored
    video: str = ""


@dataclass(frozen=True)
class StepStatus:
    mode: str  # POLICY | HUMAN | REWIND
    step: int
    subtask: str
    images: dict[str, np.ndarray]


def mode_label(intervened: bool, recovery: bool) -> str:
    return "REWIND" if recovery else "HUMAN" if intervened else "POLICY"


def _chunk(policy: Any, obs: dict[str, Any], n: int) -> list[np.ndarray]:
    return list(np.asarray(policy.sample_chunk([obs]), np.float32)[0][:n])


def run_supervised_episode(env: Any, policy: Any, intervener: Any, seed: int, *, task: str, n_action_steps: int,
                policy_version: int = 0, on_step: Callable[[StepStatus], None] | None = None,
                frames: list[np.ndarray] | None = None, video_size: int = 256) -> tuple[Episode | None, EpisodeRecord]:
    """One supervised episode; returns (None, record) if the supervisor quit or it has no steps.

    The policy is asked for a chunk only while it acts; while the supervisor holds control the
    queue is emptied, so the policy re-plans from wherever control comes back."""
    from vla.video import annotate, can_view, view_frame

    obs, info = env.reset(seed=seed)
    policy.reset()
    intervener.reset()
    expert = getattr(intervener, "expert", None)
    if expert is not None:
        expert.reset(seed)
    builder = EpisodeBuilder(task=task, instruction=obs["instruction"], source="rollout", seed=seed)
    queue: list[np.ndarray] = []
    held = quit_ = False
    n_int = n_rec = 0
    while True:
        if held:
            info.pop("policy_action", None)
        else:
            queue = queue or _chunk(policy, obs, n_action_steps)
            info["policy_action"] = queue[0]
        intervened = bool(intervener.wants_control(obs, info))
        if intervened:
            action, recovery = intervener.act(obs, info)
            action, recovery, queue = np.asarray(action, np.float32), bool(recovery), []
        else:
            quit_ = bool(getattr(intervener, "quit_requested", False))
            if quit_ or intervener.episode_done:
                break
            if held:
                policy.reset()  # its observation history stops where the supervisor took over
            queue = queue or _chunk(policy, obs, n_action_steps)
            action, recovery = queue.pop(0), False
        held = intervened
        next_obs, reward, terminated, truncated, info = env.step(action)
        builder.add_step(images=obs["images"], state=obs["state"], action=action, timestamp=obs["timestamp"],
                         reward=float(reward), is_intervention=intervened, is_recovery=recovery,
                         policy_version=policy_version)
        n_int, n_rec = n_int + intervened, n_rec + recovery
        obs = next_obs
        if frames is not None and can_view(env, obs, video_size):
            frames.append(annotate(view_frame(env, obs, video_size), len(builder), info.get("subtask"),
                                   mode_label(intervened, recovery).lower()))
        if on_step is not None:
            on_step(StepStatus(mode_label(intervened, recovery), len(builder), str(info.get("subtask", "")),
                               obs["images"]))
        if terminated or truncated or info.get("success") or intervener.episode_done:
            break
    outcome = getattr(intervener, "outcome", None)
    # The person's mark wins over the simulator's: on a real arm it is the only success signal.
    success = outcome == "success" if outcome is not None else bool(info.get("success", False))
    builder.source = "intervention" if n_int else "rollout"
    record = EpisodeRecord(seed=seed, success=success, length=len(builder), source=builder.source,
                           takeovers=len(getattr(intervener, "takeovers", [])), intervention_steps=n_int,
                           recovery_steps=n_rec, outcome=outcome)
    if quit_ or len(builder) == 0:
        return None, record
    return builder.finish(success), record


@contextlib.contextmanager
def deferred_interrupt() -> Iterator[list[bool]]:
    """Hold Ctrl-C back while the store commits; yields a flag list that is [True] if one came."""
    received: list[bool] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = signal.signal(signal.SIGINT, lambda *_: received.append(True))
    try:
        yield received
    finally:
        signal.signal(signal.SIGINT, previous)
