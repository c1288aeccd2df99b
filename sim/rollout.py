"""Episodes in the store's schema from simulation: a scripted expert's demo (source="demo"), or a
policy supervised by an intervener (RaC / HG-DAgger session, source="intervention")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vla.data.builder import EpisodeBuilder
from vla.data.schema import Episode, StoreSchema


def schema_for_env(env: Any, fps: float = 20.0) -> StoreSchema:
    """The EpisodeStore schema matching an env's cameras, image size, state and action dims."""
    u = env.unwrapped
    size = int(u.image_size)
    return StoreSchema(cameras={c: (size, size) for c in u.cameras}, state_dim=int(u.state_dim),
                       action_dim=int(env.action_space.shape[0]), fps=fps)


def run_expert_episode(env: Any, expert: Any, seed: int, task: str | None = None,
                       options: dict[str, Any] | None = None) -> Episode:
    """Reset `env` with `seed`, let `expert` act until success or the horizon; one Episode.

    Each stored step pairs the observation *before* the action with that action, as a policy sees
    it. `episode.extra` holds the final info (`subtasks_done`) and the episode length.
    """
    u = env.unwrapped
    obs, info = env.reset(seed=seed, options=options)
    expert.reset(seed)
    builder = EpisodeBuilder(task=task or u.TASK, instruction=obs["instruction"], source="demo", seed=int(seed))
    terminated = truncated = False
    while not (terminated or truncated):
        out = expert.act(obs)
        # Native experts return the action, robosuite ones (action, is_recovery).
        action = np.asarray(out[0] if isinstance(out, tuple) else out, dtype=np.float32)
        next_obs, reward, terminated, truncated, info = env.step(action)
        builder.add_step(images=obs["images"], state=obs["state"], action=action, timestamp=obs["timestamp"],
                         reward=float(reward))
        obs = next_obs
    episode = builder.finish(success=bool(info["success"]))
    episode.extra = {"subtasks_done": list(info.get("subtasks_done", [])), "length": len(builder)}
    return episode


def run_intervention_episode(env: Any, policy: Callable[[dict[str, Any]], np.ndarray], intervener: Any,
                             seed: int, task: str | None = None, policy_version: int = 0,
                             options: dict[str, Any] | None = None) -> Episode:
    """One supervised rollout: `policy(obs) -> action` acts until `intervener.wants_control`; the
    intervener's steps are stored with is_intervention=True and its rewind steps is_recovery=True.
    Ends at success, the horizon, or when the intervener says the episode is over (RaC)."""
    u = env.unwrapped
    obs, info = env.reset(seed=seed, options=options)
    intervener.reset()
    builder = EpisodeBuilder(task=task or u.TASK, instruction=obs["instruction"], source="intervention",
                             seed=int(seed))
    terminated = truncated = False
    while not (terminated or truncated):
        policy_action = np.asarray(policy(obs), dtype=np.float32)
        info["policy_action"] = policy_action
        if intervener.wants_control(obs, info):
            action, recovery = intervener.act(obs, info)
            action, intervened = np.asarray(action, dtype=np.float32), True
        elif getattr(intervener, "episode_done", False):
            break
        else:
            action, recovery, intervened = policy_action, False, False
        next_obs, reward, terminated, truncated, info = env.step(action)
        builder.add_step(images=obs["images"], state=obs["state"], action=action, timestamp=obs["timestamp"],
                         reward=float(reward), is_intervention=intervened, is_recovery=bool(recovery),
                         policy_version=policy_version)
        obs = next_obs
    episode = builder.finish(success=bool(info["success"]))
    episode.extra = {"subtasks_done": list(info.get("subtasks_done", [])), "length": len(builder),
                     "takeovers": list(getattr(intervener, "takeovers", []))}
    return episode
