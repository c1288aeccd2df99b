"""`sft`: plain behaviour cloning on every step of the store - demos, the policy's own actions and
the person's corrections alike (the baseline every weighting is measured against)."""

from __future__ import annotations

import numpy as np

from vla.refine.labels import StepLabels
from vla.refine.methods.rule import StepRuleMethod, Steps
from vla.registry import REFINE_METHODS


def every_step_loss(labels: StepLabels) -> np.ndarray:
    """1 on every step of the selected episodes."""
    loss = np.zeros(len(labels.episode), np.float32)
    loss[labels.episode >= 0] = 1.0
    return loss


@REFINE_METHODS.register("sft")
class Sft(StepRuleMethod):
    def loss(self, labels: StepLabels, steps: Steps) -> np.ndarray:
        return every_step_loss(labels)
