"""What an evaluation's parent and its workers (local subprocesses, Ray tasks) exchange: each episode's
result, and the task's keywords from a config or a worker's spec. Its own module so that the parent
(sim/evaluate.py), the worker (sim/eval_worker.py) and the Ray backend share it without importing
each other."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class EpisodeResult:
    seed: int
    success: bool
    length: int
    reward: float
    subtasks: list[str] = field(default_factory=list)  # sub-tasks in the order they became current
    subtasks_done: list[str] = field(default_factory=list)
    seconds: float = 0.0
    video: str = ""
    intervention_steps: int = 0
    recovery_steps: int = 0
    takeovers: int = 0
    # why and when the intervener took over, one "reason@step" per takeover (sim/intervener.py's reasons:
    # regressed, timeout, off_plan, disagreement, release, crooked_grasp, requested)
    takeover_reasons: list[str] = field(default_factory=list)
    # steps whose chunk was sampled under guidance (a guided policy's `last_guided`, e.g. ReGuide)
    guided_steps: list[int] = field(default_factory=list)
    # with instruction_vocab: the training phrasing the episode's instruction was replaced by ("" = none)
    grounded_to: str = ""
    control_hz: float = 20.0  # the env's control rate: length / control_hz is the episode's robot time
    # with poses=ESTIMATOR: each object's median position error (mm) of the estimator over the episode
    pose_error_mm: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> EpisodeResult:
        """A worker's result; fields this process does not know are dropped (a worker started after an
        upgrade during a long run may report more), on either backend."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})



def env_kwargs(config: Any) -> dict[str, Any]:
    """The task factory's keywords of an evaluation config (`sim.evaluate.EvalConfig`) or a worker's spec."""
    if not isinstance(config, dict):
        return config.env_kwargs()  # a config deriving from vla.evaluation.EnvSettings
    c = config
    # "" is resolved by run_evaluation before any worker; image is the tasks' own default
    kwargs: dict[str, Any] = {"image_size": c["image_size"], "obs_mode": c["obs_mode"] or "image"}
    if c["cameras"] is not None:
        kwargs["cameras"] = tuple(c["cameras"])
    if c["horizon"] is not None:
        kwargs["horizon"] = c["horizon"]
    return kwargs
