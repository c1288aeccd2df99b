"""What a refinement method is: one unit the loop (`vla.refine.loop.RefineRun`) drives without
knowing its name. Built-in methods (vla/refine/methods/) and outside ones (worldmodel/'s imagination
and ReGuide) implement the same interface and register under a name in `vla.registry.REFINE_METHODS`;
adding a method is its own file plus one `@REFINE_METHODS.register(NAME)` line.

A method is a subclass of `RefineMethod` with:
- `Args`: its settings, a dataclass filled from the run's `method_args` (unknown keys are rejected
  with the close match) and checked by its `validate()`;
- a collection rule, `collection(run, version) -> Collection`: who acts in version k's real
  rollouts (the policy spec), which intervener watches them and what the episodes are recorded as;
- optionally `augment(run, rollouts) -> Added`: data beyond the real rollouts (imagined episodes,
  re-ranked chunks) with their weights; the loop keeps what it returns (`iter_k/added.json`) and
  hands every round's `Added` back to `weights`, so nothing travels as a file read back by path;
- a weighting rule, `weights(run, version, model, added) -> (StepWeights, info)`: the loss and
  sampling weight of every step of the run's store for fine-tuning version k;
- optionally the trainer hooks: `setup_training` (the model and settings that produce version
  k + 1), `train_steps`, and, for versions that are not fine-tuned checkpoints (DSRL's steered base),
  `version_policy`, `trained` and `train`.
Every hook has a default here, so the loop calls each of them unconditionally.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from vla.data.schema import Source, closest
from vla.refine.weights import GROUPS, StepWeights

if TYPE_CHECKING:
    import torch

    from vla.refine.config import RefineConfig
    from vla.train.config import TrainConfig


class Run(Protocol):
    """What a method sees of the run that drives it."""

    cfg: RefineConfig
    out: Path
    store_path: Path

    def policy_path(self, version: int) -> Path: ...

    def version_policy(self, version: int) -> str: ...

    def collect_seeds(self, version: int) -> list[int]: ...

    def finetune(self, version: int) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Collection:
    """How version k's real rollouts are collected."""

    policy: str  # the policy spec that acts (a checkpoint folder, or "NAME:ARGS")
    intervener: str = "hg_dagger"  # "" none | "hg_dagger" (take over, hand back) | "rac" (rewind, correct)
    source: Source = Source.ROLLOUT  # what the episodes are recorded as
    label: str = "noisy"  # "expert": the intervener labels every step with its action (DAgger)


@dataclass(frozen=True)
class Rollouts:
    """One round's real rollouts as the loop hands them to `augment`."""

    version: int
    episodes: np.ndarray  # int64 store indices of the round's executed episodes
    summary: dict[str, Any]  # the collection's summary (per-episode details in `episodes_detail`)


@dataclass
class Added:
    """What a method added to the run's store in one round: the episodes (store indices), each with
    its loss weight, and the method's figures for the round."""

    episodes: list[int] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    # the episodes' later steps are not real observations (an image policy's imagined chunk holds its
    # start frame; a re-ranked chunk repeats its state): only each episode's first window is trained on
    first_window_only: bool = False
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.episodes) != len(self.weights):
            raise ValueError(f"Added: {len(self.episodes)} episodes but {len(self.weights)} weights")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: dict[str, Any]) -> Added:
        return Added(episodes=[int(e) for e in d["episodes"]], weights=[float(w) for w in d["weights"]],
                     first_window_only=bool(d["first_window_only"]), info=dict(d["info"]))


@dataclass
class MethodArgs:
    """A method's settings (`method_args`); a method without settings uses this empty one."""

    def validate(self) -> None:
        """One-line errors naming the `method_args` key that is wrong."""


@dataclass
class SamplingArgs(MethodArgs):
    """How the built-in methods draw their training windows: `demo_share` of the windows from the
    demos and the rest from the method's other supervised steps (None: in proportion to the steps), or
    a fixed share per group (`group_shares`, e.g. {demo: 0.4, correction: 0.3, policy: 0.3}, so that
    methods compare at equal shares; it replaces demo_share)."""

    demo_share: float | None = None
    group_shares: dict[str, float] = field(default_factory=dict)

    def validate(self) -> None:
        if self.demo_share is not None and not 0.0 <= self.demo_share <= 1.0:
            raise ValueError(f"method_args.demo_share must be in [0, 1], got {self.demo_share}")
        bad = sorted(set(self.group_shares) - set(GROUPS))
        if bad:
            raise ValueError(f"method_args.group_shares: unknown group '{bad[0]}'" + closest(bad[0], GROUPS))


class RefineMethod:
    """The base every refinement method derives from; see the module docstring."""

    Args: ClassVar[type[MethodArgs]] = MethodArgs
    intervener: ClassVar[str] = "hg_dagger"  # the intervener of its real rollouts unless the run sets one

    def __init__(self, run_cfg: RefineConfig) -> None:
        from vla.config import from_dict

        self.run_cfg = run_cfg
        self.args = from_dict(self.Args, dict(run_cfg.method_args), "method_args")
        self.args.validate()
        self.check()

    def check(self) -> None:
        """Checks of the method's settings against the run's (one-line errors)."""

    # ------------------------------------------------------------------ collection
    def collection(self, run: Run, version: int) -> Collection:
        return Collection(policy=run.version_policy(version), intervener=self.intervener)

    def augment(self, run: Run, rollouts: Rollouts) -> Added | None:
        """Data beyond version k's real rollouts, once they are in the store (None: nothing)."""
        return None

    # ------------------------------------------------------------------ fine-tuning
    def weights(self, run: Run, version: int, model: torch.nn.Module, added: list[Added]
                ) -> tuple[StepWeights, dict[str, float]]:
        raise NotImplementedError(f"{type(self).__name__} has no weighting rule")

    def setup_training(self, run: Run, version: int, model: torch.nn.Module, train_cfg: TrainConfig
                       ) -> tuple[torch.nn.Module, TrainConfig]:
        """The model and settings that produce version k + 1 (default: fine-tune version k as it is)."""
        return model, train_cfg

    def train_steps(self) -> int:
        """The step count at which a version's fine-tuning is complete."""
        return self.run_cfg.train.steps

    # ------------------------------------------------------------------ versions
    def version_policy(self, run: Run, version: int) -> str:
        """The policy spec of version k (default: its fine-tuned checkpoint)."""
        return str(run.policy_path(version))

    def trained(self, run: Run, version: int) -> bool:
        try:
            run.policy_path(version)
            return True
        except FileNotFoundError:
            return False

    def train(self, run: Run, version: int) -> dict[str, Any]:
        """Make version k + 1 (default: fine-tune version k with this method's weights)."""
        return run.finetune(version)
