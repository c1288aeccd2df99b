"""`hg_dagger` (HG-DAgger, Kelly et al., arXiv 1810.02890): the person takes over where the policy
goes wrong and hands back; the policy is fine-tuned on the demos and the person's corrections,
aggregated uniformly (the policy's own steps are not imitated)."""

from __future__ import annotations

import numpy as np

from vla.refine.labels import StepLabels
from vla.refine.methods.rule import StepRuleMethod, Steps, selected_demo_steps
from vla.registry import REFINE_METHODS


def correction_loss(labels: StepLabels, episode_is_demo: np.ndarray) -> np.ndarray:
    """1 on demo steps and on the intervention (recovery and correction) steps of rollouts."""
    selected, demo_step = selected_demo_steps(labels, episode_is_demo)
    loss = np.zeros(len(selected), np.float32)
    loss[demo_step | (labels.demo & ~demo_step)] = 1.0
    return loss


@REFINE_METHODS.register("hg_dagger")
class HgDagger(StepRuleMethod):
    def loss(self, labels: StepLabels, steps: Steps) -> np.ndarray:
        return correction_loss(labels, steps.is_demo)
