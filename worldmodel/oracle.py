"""The oracle of imagination refinement: the same imagined budget, its outcomes from the simulator.

Each start state of an iteration is a real recorded step (a first frame or a keyframe of one of
the policy's rollouts); the simulator reaches it again by resetting with the episode's seed and
replaying its recorded actions (MuJoCo is deterministic: the replayed state is checked against
the recorded one). From there the same K chunk sequences of the current policy are executed in the
simulator instead of the world model, and the true success takes the place of the predicted one.
What the refinement then does with them (group-relative weights, the first `train_chunks` chunks
written as source=imagined and supervised) is unchanged, so the oracle bounds what a perfect world
model could give the method on the same budget.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from vla.data.store import EpisodeStore
from worldmodel.imagined_env import StartStates


def replay(env: Any, seed: int, actions: Any) -> dict[str, Any]:
    """Reset `env` with an episode's seed and execute its recorded `actions`: the observation the episode
    had after them (MuJoCo is deterministic; callers compare its state with the recorded one)."""
    obs, _ = env.reset(seed=seed)
    for a in actions:
        obs = env.step(a)[0]
    return obs


def simulate(task: str, store_path: str | Path, starts: StartStates, samples: int, n_chunks: int, chunk: int,
             policy: Any, seed: int = 0, continuation: Any = None, sampled_chunks: int = 0
             ) -> dict[str, np.ndarray]:
    """Roll `policy` in the simulator from every start, `samples` times each (rows ordered as
    `starts.repeat(samples)`). With a `continuation` policy, only the first `sampled_chunks` chunks are
    `policy`'s and the rest are the continuation's, so an outcome is the value of those first chunks
    under the policy as it deploys (Q(s, chunk)), not of a whole noisy sequence. Returns the keys of
    `worldmodel.imagined_env.rollout` (success_prob is 1 from the chunk that succeeded on, value and
    disagreement are 0) plus `step_states`
    [B, n_chunks * chunk, D] (the state before each executed action), `lengths` [B] (actions
    executed) and `replay_error` [n_starts] (max |replayed - recorded| state at the start)."""
    from vla.registry import TASKS

    envs = [TASKS.make(task, obs_mode="state", cameras=[]) for _ in range(samples)]
    with EpisodeStore.open(store_path) as store:
        table = store.table()
        prefixes = [store.read("action", int(table.episode_starts[e]), int(table.episode_starts[e]) + int(t))
                    for e, t in zip(starts.episode, starts.step, strict=True)]
    n, d = len(starts), starts.state.shape[1]
    b = n * samples
    a_dim = int(envs[0].action_space.shape[0])
    out = {"success": np.zeros(b, bool), "success_prob": np.zeros((b, n_chunks), np.float32),
           "value": np.zeros((b, n_chunks + 1), np.float32), "disagreement": np.zeros((b, n_chunks), np.float32),
           "states": np.zeros((b, n_chunks + 1, d), np.float32), "actions": np.zeros((b, n_chunks, chunk, a_dim),
                                                                                       np.float32),
           "step_states": np.zeros((b, n_chunks * chunk, d), np.float32), "lengths": np.zeros(b, np.int64),
           "replay_error": np.zeros(n, np.float32)}
    try:
        for i in range(n):
            ep_seed = int(table.seed[starts.episode[i]])
            obs_list = [replay(env, ep_seed, prefixes[i]) for env in envs]
            out["replay_error"][i] = float(np.abs(obs_list[0]["state"] - starts.state[i]).max())
            rows = np.arange(i * samples, (i + 1) * samples)
            for pol in (policy, continuation):
                if hasattr(pol, "reset"):
                    pol.reset(seed * 100_003 + i)
            live = np.ones(samples, bool)
            for j, r in enumerate(rows):
                out["states"][r, 0] = obs_list[j]["state"]
            for k in range(n_chunks):
                acting = continuation if continuation is not None and k >= sampled_chunks else policy
                acts = np.asarray(acting.sample_chunk(obs_list), np.float32)[:, :chunk]
                for j, (env, r) in enumerate(zip(envs, rows, strict=True)):
                    if not live[j]:
                        out["states"][r, k + 1] = out["states"][r, k]
                        continue
                    out["actions"][r, k] = acts[j]
                    for step, a in enumerate(acts[j]):
                        out["step_states"][r, k * chunk + step] = obs_list[j]["state"]
                        obs_list[j], _, term, trunc, info = env.step(a)
                        out["lengths"][r] += 1
                        if info.get("success"):
                            out["success"][r] = True
                        if info.get("success") or term or trunc:
                            live[j] = False
                            out["step_states"][r, k * chunk + step + 1:(k + 1) * chunk] = obs_list[j]["state"]
                            out["actions"][r, k, step + 1:] = a
                            break
                    out["states"][r, k + 1] = obs_list[j]["state"]
                    if out["success"][r]:
                        out["success_prob"][r, k:] = 1.0
                if not live.any():
                    break
    finally:
        for env in envs:
            env.close()
    return out
