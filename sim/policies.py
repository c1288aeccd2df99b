"""Policies the evaluator can run, named by a spec string, and a scripted expert behind the Policy
protocol.

Specs: "zero" (hold still: all-zero deltas, gripper open), "random" (seeded uniform actions),
"expert" (the task's scripted expert; `noise`/`skill` for mixed-quality demos), and every spec of
`vla.policy.specs` (a checkpoint or ONNX export folder, "NAME:ARGS" wrappers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vla.interfaces import GuidanceFn, Observation

BUILTIN = ("zero", "random", "expert")
# a config's expert_* keys (sim.evaluate.EvalConfig) -> NativePickPlaceExpert's keyword: a new option of
# the native expert is a field there, a key here and a keyword of the expert, nothing in between
EXPERT_OPTIONS = {"expert_rot_speed": "rot_speed", "expert_drop": "drop", "expert_turn_late": "turn_late",
                  "expert_gain": "gain", "expert_drift": "drift", "expert_rot_noise": "rot_noise"}


def expert_options(config: Mapping[str, Any]) -> dict[str, Any]:
    """The native expert's options a config or worker spec sets (its expert_* keys left at their
    defaults, None / 0 / False, are not options)."""
    return {kw: config[key] for key, kw in EXPERT_OPTIONS.items() if config.get(key)}


def make_expert(env: Any, noise: float = 0.0, skill: float = 1.0, seed: int | None = None,
                options: Mapping[str, Any] | None = None) -> Any:
    """The scripted expert of an env's task: robosuite tasks have their own, native tasks share one
    (`options`: its keywords, `rot_speed`, `drop`, `turn_late`, see NativePickPlaceExpert; expert_options())."""
    unwrapped = env.unwrapped
    native = type(unwrapped).__module__.startswith("sim.tasks.native")
    options = dict(options or {})
    unknown = sorted(set(options) - set(EXPERT_OPTIONS.values()))
    if unknown:
        raise ValueError(f"unknown expert options {unknown} (valid: {sorted(EXPERT_OPTIONS.values())})")
    if options and not native:
        raise ValueError(f"expert_{sorted(options)[0]} is an option of the native tasks' expert, not of "
                         f"{type(unwrapped).__name__}'s")
    if type(unwrapped).__module__ == "sim.tasks.metaworld_tasks":
        from sim.tasks.metaworld_tasks import MetaWorldExpert

        return MetaWorldExpert(env, noise=noise, skill=skill, seed=seed)
    if type(unwrapped).__module__.startswith("sim.tasks.robosuite"):
        from sim.experts.robosuite_experts import make_expert as make_robosuite_expert

        return make_robosuite_expert(env, noise=noise, skill=skill, seed=seed)
    from sim.experts.native import NativePickPlaceExpert

    return NativePickPlaceExpert(env, noise=noise, skill=skill, seed=seed, **options)


def expert_action(expert: Any, obs: Observation, info: dict[str, Any]) -> np.ndarray:
    """The expert's next action (experts return either an action or (action, is_recovery))."""
    try:
        out = expert.act(obs, info)
    except TypeError:
        out = expert.act(obs)
    action = out[0] if isinstance(out, tuple) else out
    return np.asarray(action, dtype=np.float32)


class ConstantPolicy:
    """Holds still: zero end-effector deltas, gripper open."""

    def __init__(self, action_dim: int, horizon: int = 1) -> None:
        self.action = np.zeros(action_dim, np.float32)
        self.action[-1] = -1.0
        self.horizon = horizon

    def sample_chunk(self, obs_batch: Sequence[Observation], prefix: np.ndarray | None = None,
                     guidance: GuidanceFn | None = None) -> np.ndarray:
        return np.broadcast_to(self.action, (len(obs_batch), self.horizon, len(self.action))).copy()

    def reset(self, seed: int | None = None) -> None:
        pass


class RandomPolicy(ConstantPolicy):
    def __init__(self, action_dim: int, horizon: int = 1, seed: int = 0) -> None:
        super().__init__(action_dim, horizon)
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def sample_chunk(self, obs_batch: Sequence[Observation], prefix: np.ndarray | None = None,
                     guidance: GuidanceFn | None = None) -> np.ndarray:
        shape = (len(obs_batch), self.horizon, len(self.action))
        return self.rng.uniform(-1, 1, shape).astype(np.float32)


class ExpertPolicy:
    """The scripted expert as a one-step-chunk Policy; the runner feeds it the latest `info`."""

    def __init__(self, env: Any, noise: float = 0.0, skill: float = 1.0, seed: int | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        self.expert = make_expert(env, noise=noise, skill=skill, seed=seed, options=options)
        self.info: dict[str, Any] = {}

    def sample_chunk(self, obs_batch: Sequence[Observation], prefix: np.ndarray | None = None,
                     guidance: GuidanceFn | None = None) -> np.ndarray:
        if len(obs_batch) != 1:
            raise ValueError(f"the expert acts in one env at a time, got a batch of {len(obs_batch)}")
        return expert_action(self.expert, obs_batch[0], self.info)[None, None]

    def reset(self, seed: int | None = None) -> None:
        self.expert.reset(seed)
        self.info = {}


def load_policy(spec: str, env: Any, *, noise: float = 0.0, skill: float = 1.0, seed: int = 0,
                noise_scale: float | None = None, expert_options: Mapping[str, Any] | None = None) -> Any:
    """`noise_scale`: a checkpoint's inference noise scale instead of its own (policy.noise_scale);
    `noise`, `skill`, `expert_options`: the expert's (make_expert)."""
    action_dim = int(env.action_space.shape[0])
    if spec == "zero":
        return ConstantPolicy(action_dim)
    if spec == "random":
        return RandomPolicy(action_dim, seed=seed)
    if spec == "expert":
        return ExpertPolicy(env, noise=noise, skill=skill, seed=seed, options=expert_options)
    from vla.policy.specs import load_spec, wrapper_spec

    if wrapper_spec(spec) is None and not Path(spec).exists():
        raise FileNotFoundError(f"policy '{spec}' is neither a built-in ({', '.join(BUILTIN)}) nor an existing "
                                "checkpoint folder")
    return load_spec(spec, seed=seed, noise_scale=noise_scale,
                     load=lambda s: load_policy(s, env, noise=noise, skill=skill, seed=seed, noise_scale=noise_scale))
