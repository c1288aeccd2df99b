"""The shape the built-in methods share: a loss rule over the store's per-step labels
(`vla.refine.labels.StepLabels`), sampled by the one shared rule (`vla.refine.weights.shaped`:
`demo_share` or `group_shares`, `vla.refine.method.SamplingArgs`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from vla.data.schema import Source
from vla.data.store import EpisodeStore, EpisodeTable
from vla.refine.labels import StepLabels, build_step_labels
from vla.refine.method import Added, RefineMethod, Run, SamplingArgs
from vla.refine.weights import StepWeights, shaped

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Steps:
    """What a loss rule reads: the run's store and its episodes, for fine-tuning version k."""

    store: EpisodeStore
    table: EpisodeTable
    success: np.ndarray  # bool per episode
    is_demo: np.ndarray  # bool per episode
    version: int
    model: Any  # the policy being fine-tuned (its encoder gives the critics' image features)
    run: Run


def selected_demo_steps(labels: StepLabels, episode_is_demo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(selected, demo_step) per step: steps of the selected episodes, and those of demo episodes."""
    selected = labels.episode >= 0
    ep = np.where(selected, labels.episode, 0)
    return selected, selected & np.asarray(episode_is_demo, bool)[ep]


class StepRuleMethod(RefineMethod):
    """A method whose weights are `rule(steps) -> (labels, loss, info)` sampled by the shared rule."""

    Args: Any = SamplingArgs
    args: SamplingArgs

    def rule(self, steps: Steps) -> tuple[StepLabels, np.ndarray, dict[str, float]]:
        labels = build_step_labels(steps.store)
        return labels, self.loss(labels, steps), {}

    def loss(self, labels: StepLabels, steps: Steps) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} has no loss rule")

    def by_loss(self) -> bool:
        """Whether the loss weights are moved into the sampler (`vla.refine.weights.sample_by_loss`)."""
        return False

    def weights(self, run: Run, version: int, model: torch.nn.Module, added: list[Added]
                ) -> tuple[StepWeights, dict[str, float]]:
        store = EpisodeStore.open(run.store_path)
        table = store.table()
        steps = Steps(store=store, table=table, success=np.asarray(table.success, bool),
                      is_demo=np.asarray(table.source == Source.DEMO), version=version, model=model, run=run)
        labels, loss, info = self.rule(steps)
        w, stats = shaped(loss, labels, steps.is_demo, self.args.demo_share, self.args.group_shares or None,
                          by_loss=self.by_loss())
        return w, {**info, **stats}
