"""`habc`: HABC (arXiv 2606.17043) - the demos and the person's corrections as demonstrations, the
policy's own steps weighted by two critics (viability: will the episode succeed from here;
efficiency: how soon) through a state-adaptive gate. The formulation, and where ours fills the
paper's gaps, is written down in `vla.refine.habc_math`; this file executes it:

1. labels over the store (`vla.refine.labels`): outcome labels on the current policy's own segments
   (`current_version_only`), or every rollout step labelled with its episode's outcome
   (`mask_interventions=false`, `habc_math.outcome_only_labels`);
2. the critics fitted on per-step features (`critic.*`, `vla.refine.critics.train_critics`);
3. the policy steps' weights (`habc_math.habc_weights`), or with `outcome_gate` only the runs that
   ended in a success, ranked inside them (`habc_math.gated_weights`);
4. the loss: `demo_weight` on demos and corrections, the critic's weight on the policy's steps;
   sampled by the shared rule, optionally in proportion to the weights (`sample_by_weight`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from vla.refine import habc_math as hm
from vla.refine.critics import critic_values, train_critics
from vla.refine.features import step_features
from vla.refine.labels import StepLabels, build_step_labels
from vla.refine.method import SamplingArgs
from vla.refine.methods.rule import StepRuleMethod, Steps
from vla.registry import REFINE_METHODS


@dataclass
class HabcArgs(SamplingArgs):
    gamma: float = 0.98
    v_low: float = 0.3  # the gate: pure viability below, pure efficiency above v_high
    v_high: float = 0.8
    beta: float = 1.0  # temperature of exp(A / beta)
    w_max: float = 20.0
    demo_weight: float = 1.0  # loss weight of demonstrations and corrections
    use_gate: bool = True  # false: the gate fixed at 0.5
    single_critic: bool = False  # the ablation: both advantages from the viability head
    mask_interventions: bool = True  # false: every rollout step labelled with its episode's outcome
    scale_by_viability: bool = True  # the policy steps' weights times V(s')
    current_version_only: bool = True  # outcome labels only on the current policy's own segments (the paper)
    # draw the policy's windows in proportion to their critic weight (loss weight 1) instead of
    # uniformly with the weight on the loss: the group's share is then spent on the steps it endorses
    sample_by_weight: bool = False
    # GAE(lambda) advantages over each run of policy steps instead of the one-step form (null);
    # see habc_math.lambda_advantages
    adv_lambda: float | None = None
    # supervise only the policy's runs that ended in a success, ranked inside them by exp(A / beta)
    # normalised to mean 1 (replaces the V(s') scaling); see habc_math.gated_weights
    outcome_gate: bool = False

    def validate(self) -> None:
        super().validate()
        if self.demo_weight <= 0 or self.beta <= 0:
            raise ValueError(f"method_args: demo_weight and beta must be > 0, got {self.demo_weight}, {self.beta}")
        if self.adv_lambda is not None and not 0.0 <= self.adv_lambda <= 1.0:
            raise ValueError(f"method_args.adv_lambda must be in [0, 1] (or null: one-step advantages), "
                             f"got {self.adv_lambda}")
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"method_args.gamma must be in (0, 1], got {self.gamma}")


def habc_loss(labels: StepLabels, critic_weight: np.ndarray, demo_weight: float) -> np.ndarray:
    """`demo_weight` on demos and corrections, the critic's weight on the policy's steps."""
    loss = np.zeros(len(labels.episode), np.float32)
    loss[labels.demo] = demo_weight
    loss[labels.policy_step] = critic_weight[labels.policy_step]
    return loss


@REFINE_METHODS.register("habc")
class Habc(StepRuleMethod):
    Args = HabcArgs
    args: HabcArgs

    def critic(self, steps: Steps) -> tuple[torch.nn.Module, torch.Tensor, StepLabels, dict[str, float]]:
        """The critics fitted for fine-tuning version k: (critic, per-step features, labels, fit figures)."""
        a, c = self.args, self.run_cfg.critic
        labels = build_step_labels(steps.store, gamma=a.gamma,
                                   current_version=steps.version if a.current_version_only else None)
        if not a.mask_interventions:
            labels = hm.outcome_only_labels(labels, steps.success, steps.is_demo, a.gamma)
        feats = step_features(c.features, steps.store, steps.model)
        critic, losses = train_critics(feats, torch.from_numpy(labels.viability),
                                       torch.from_numpy(labels.viability_mask), torch.from_numpy(labels.efficiency),
                                       torch.from_numpy(labels.efficiency_mask), c,
                                       seed=self.run_cfg.seed + steps.version,
                                       episode=torch.from_numpy(labels.episode),
                                       next_index=torch.from_numpy(labels.next_index), gamma=a.gamma,
                                       single_critic=a.single_critic)
        return critic, feats, labels, losses

    def rule(self, steps: Steps) -> tuple[StepLabels, np.ndarray, dict[str, float]]:
        a = self.args
        critic, feats, labels, losses = self.critic(steps)
        v, eff = critic_values(critic, feats)
        pol = labels.policy_step
        out = hm.habc_weights(v, eff, torch.from_numpy(labels.next_index), torch.from_numpy(labels.done_success),
                              torch.from_numpy(~pol), a, scale_rows=torch.from_numpy(pol))
        weight = out["weight"].numpy()
        if a.outcome_gate:
            keep = pol & hm.run_success(pol, labels.next_index, labels.done_success)
            weight = hm.gated_weights(out["advantage"].numpy(), keep, a.beta, a.w_max)
        info = {**losses, "policy_weight_mean": float(weight[pol].mean()) if pol.any() else 0.0,
                "gate_mean": float(out["gate"].numpy()[pol].mean()) if pol.any() else 0.0,
                # how many of the policy's steps the weights really train on (filtered BC: its
                # successful steps' share)
                "policy_effective_share": hm.effective_share(weight, pol)}
        return labels, habc_loss(labels, weight, a.demo_weight), info

    def by_loss(self) -> bool:
        return self.args.sample_by_weight
