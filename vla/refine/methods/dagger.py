"""`dagger` (Ross et al. 2011, arXiv 1011.0686): every step supervised as in `sft`, but the policy's
own steps carry the expert's action from their state: collected with `label="expert"`, the
intervener labels every step (`sim.intervener.ExpertIntervener.label`), not the action the policy
took. Where we differ: the scripted person still takes over on a failure as in HG-DAgger (the
paper's beta = 0 lets the policy run on), so a rollout also holds the recovery the expert drives."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from vla.refine.labels import StepLabels
from vla.refine.method import Collection, Run
from vla.refine.methods.rule import StepRuleMethod, Steps
from vla.refine.methods.sft import every_step_loss
from vla.registry import REFINE_METHODS


@REFINE_METHODS.register("dagger")
class Dagger(StepRuleMethod):
    def check(self) -> None:
        if self.run_cfg.intervener == "":
            raise ValueError("method=dagger labels every step with the intervener's expert; intervener='' has none")

    def collection(self, run: Run, version: int) -> Collection:
        return replace(super().collection(run, version), label="expert")

    def loss(self, labels: StepLabels, steps: Steps) -> np.ndarray:
        return every_step_loss(labels)  # the policy's steps hold the expert's labels (the collection's doing)
