"""`rac` (RaC, arXiv 2509.07953): the person rewinds the robot to where it went wrong (recovery) and
then corrects it; the policy is fine-tuned on the demos and those intervention steps, with half of
the sampled windows from the demos by default (the paper trains on both)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vla.refine.labels import StepLabels
from vla.refine.method import SamplingArgs
from vla.refine.methods.hg_dagger import correction_loss
from vla.refine.methods.rule import StepRuleMethod, Steps
from vla.registry import REFINE_METHODS


@dataclass
class RacArgs(SamplingArgs):
    demo_share: float | None = 0.5


@REFINE_METHODS.register("rac")
class Rac(StepRuleMethod):
    Args = RacArgs
    intervener = "rac"

    def loss(self, labels: StepLabels, steps: Steps) -> np.ndarray:
        return correction_loss(labels, steps.is_demo)
