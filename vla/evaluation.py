"""The contract every place that runs a policy in episodes shares: which env (task, cameras, image
size, horizon, observation mode), how the policy's chunks are executed (actions per chunk, temporal
ensemble) and where the episodes run (workers, backend). `sim.evaluate.EvalConfig`, the refinement
run's config (`vla.refine.config.RefineConfig`) and a correction session's (`real.session`) contain
these settings by deriving from them, so a field, its default and its check are written once, and
`settings(cfg, Kind)` hands exactly them on (to the evaluator, to an env factory)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from vla.data.schema import closest

OBS_MODES = ("image", "state")  # what every task takes: cameras + proprio, or + object poses
BACKENDS = ("local", "ray")
RUNTIMES = ("torch", "onnx")


@dataclass
class EnvSettings:
    """Which env the episodes run in."""

    task: str = "pick_place"
    # None: a checkpoint's own cameras (the task's default cameras for the built-in policies); []: state only
    cameras: list[str] | None = None
    image_size: int = 84
    horizon: int | None = None  # None: the task's default
    # image (cameras + proprioception) or state (+ the objects' poses); "": a checkpoint's own (evaluation)
    obs_mode: str = "image"
    # what a real arm's sensors and actuators do to the episodes (vla.perturb): none, a preset (realistic)
    # or NAME:SEVERITY,... in physical units (pose_noise:2 = 2 mm); the task itself stays the truth
    perturb: str = "none"
    # domain randomisation (vla.perturb): each episode draws every kind's severity from [0, SPEC's], e.g. the
    # demos' collection (randomize=realistic); kinds that cannot apply here are left out. Not with perturb
    randomize: str = "none"
    # where a state policy's object poses come from: "" the simulator's truth, or the folder of a pose
    # estimator (`vla perception train`) that reads them from the episode's camera frames every step
    poses: str = ""
    # with poses: the weight of the newest estimate in the moving average of the task's static objects'
    # positions (a zone), restarted each episode; 1 reads every frame on its own (vla.perception.smooth)
    poses_smoothing: float = 1.0
    # with poses and poses_smoothing < 1: > 0 averages the task's moving objects (the cube) too, while their
    # estimates stay within this many mm of their average (at rest); a jump past it restarts the average
    poses_rest_gate_mm: float = 0.0

    def env_kwargs(self) -> dict[str, Any]:
        """The task factory's keywords ("" obs_mode is resolved before an env is made: image by default)."""
        kwargs: dict[str, Any] = {"image_size": self.image_size, "obs_mode": self.obs_mode or "image"}
        if self.cameras is not None:
            kwargs["cameras"] = tuple(self.cameras)
        if self.horizon is not None:
            kwargs["horizon"] = self.horizon
        return kwargs

    def check_env(self) -> None:
        from vla.perturb import parse_perturb

        if self.obs_mode not in ("", *OBS_MODES):
            raise ValueError(f"unknown obs_mode '{self.obs_mode}'" + closest(self.obs_mode, OBS_MODES))
        parse_perturb(self.perturb)
        parse_perturb(self.randomize)
        if not 0 < self.poses_smoothing <= 1:
            raise ValueError(f"poses_smoothing must be in (0, 1] (1: off), got {self.poses_smoothing}")
        if not self.poses_rest_gate_mm >= 0:
            raise ValueError(f"poses_rest_gate_mm must be >= 0 (0: off), got {self.poses_rest_gate_mm}")
        if parse_perturb(self.perturb) and parse_perturb(self.randomize):
            raise ValueError(f"perturb ({self.perturb}) and randomize ({self.randomize}) are both set; "
                             "an episode takes one of them")


@dataclass
class ChunkSettings:
    """How the policy's chunks become actions."""

    n_action_steps: int = 8  # actions executed from each chunk before the next inference
    # checkpoints: query the policy at every step and execute the weighted mean of every chunk's
    # prediction for it, weight exp(-rate * age) (vla.policy.ensemble; ACT's temporal ensemble with
    # recent predictions weighted most); None executes n_action_steps of each chunk instead
    temporal_ensemble: float | None = None
    # with temporal_ensemble: a new chunk every this many steps (1: every step, ACT's); between queries
    # the ensemble's mean of the chunks already predicted runs, at 1/N of the policy calls
    temporal_ensemble_every: int = 1
    # what computes a checkpoint's chunks: torch, or onnx (its ONNX export, `CKPT/onnx`, made once from the EMA
    # weights when missing or older than the checkpoint): the same chunks to 1e-4, about 5 ms a chunk against
    # 24 for torch on one thread (benchmarks/bench_policy.py, tiny preset). Other policy specs run as they are; a
    # wrapper spec ("NAME:ARGS") takes torch
    runtime: str = "torch"

    def check_chunks(self) -> None:
        from vla.policy.ensemble import valid_every, valid_rate

        if self.runtime not in RUNTIMES:
            raise ValueError(f"unknown runtime '{self.runtime}'" + closest(self.runtime, RUNTIMES))

        if self.n_action_steps < 1:
            raise ValueError(f"n_action_steps must be >= 1, got {self.n_action_steps}")
        if self.temporal_ensemble is not None and not valid_rate(self.temporal_ensemble):
            raise ValueError(f"temporal_ensemble must be a finite rate (or null: off), got {self.temporal_ensemble}")
        if not valid_every(self.temporal_ensemble_every):
            raise ValueError(f"temporal_ensemble_every must be an integer >= 1, got {self.temporal_ensemble_every!r}")


@dataclass
class WorkerSettings:
    """Where the episodes run."""

    workers: int = 2
    backend: str = "local"  # local: worker subprocesses here | ray: Ray tasks (sim/ray_backend.py)
    ray_address: str = ""  # ray: HOST:PORT of a cluster's head, "auto", or "" for a private one-machine cluster

    def check_workers(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown backend '{self.backend}'" + closest(self.backend, BACKENDS))


@dataclass
class Execution(EnvSettings, ChunkSettings, WorkerSettings):
    """Everything about running a policy in episodes except which policy and which seeds."""

    def check_execution(self) -> None:
        self.check_env()
        self.check_chunks()
        self.check_workers()


def settings(cfg: Any, kind: type = Execution) -> dict[str, Any]:
    """The values of `kind`'s fields in `cfg` (a config that derives from it), by name."""
    return {f.name: getattr(cfg, f.name) for f in fields(kind)}
