"""`filtered_bc`: behaviour cloning on the demos and on every step of the successful episodes (the
sparse outcome as the only filter; no critic)."""

from __future__ import annotations

import numpy as np

from vla.refine.labels import StepLabels
from vla.refine.methods.rule import StepRuleMethod, Steps, selected_demo_steps
from vla.registry import REFINE_METHODS


def filtered_loss(labels: StepLabels, episode_success: np.ndarray, episode_is_demo: np.ndarray) -> np.ndarray:
    """1 on demo steps and on every step of a successful episode."""
    selected, demo_step = selected_demo_steps(labels, episode_is_demo)
    ep = np.where(selected, labels.episode, 0)
    loss = np.zeros(len(selected), np.float32)
    loss[demo_step | (selected & np.asarray(episode_success, bool)[ep])] = 1.0
    return loss


@REFINE_METHODS.register("filtered_bc")
class FilteredBc(StepRuleMethod):
    def loss(self, labels: StepLabels, steps: Steps) -> np.ndarray:
        return filtered_loss(labels, steps.success, steps.is_demo)
