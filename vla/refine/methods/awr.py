"""`awr`: advantage-weighted regression (Peng et al. 2019, arXiv 1910.00177) - every step,
weighted exp(A / beta) with one critic: A = G_t - V(s_t), G_t the discounted Monte-Carlo return
success * gamma^(steps to go); demos weight 1. The value is the critic ensemble's efficiency head
(`vla.refine.critics`) fitted to G on the rollouts' steps."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from vla.refine.critics import critic_values, train_critics
from vla.refine.features import step_features
from vla.refine.labels import StepLabels, build_step_labels, mc_returns
from vla.refine.method import SamplingArgs
from vla.refine.methods.rule import StepRuleMethod, Steps, selected_demo_steps
from vla.registry import REFINE_METHODS


@dataclass
class AwrArgs(SamplingArgs):
    gamma: float = 0.98
    beta: float = 0.25  # temperature on G - V, with G in [0, 1]
    w_max: float = 20.0

    def validate(self) -> None:
        super().validate()
        if self.beta <= 0:
            raise ValueError(f"method_args.beta must be > 0, got {self.beta}")


def awr_weights(returns: np.ndarray, values: np.ndarray, beta: float, w_max: float) -> np.ndarray:
    """exp((G - V) / beta), clipped to w_max (advantage-weighted regression)."""
    if beta <= 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    return np.minimum(np.exp((returns - values) / beta), w_max).astype(np.float32)


def awr_loss(labels: StepLabels, episode_is_demo: np.ndarray, critic_weight: np.ndarray) -> np.ndarray:
    """1 on demo steps, the critic's weight on every other selected step."""
    selected, demo_step = selected_demo_steps(labels, episode_is_demo)
    loss = np.zeros(len(selected), np.float32)
    loss[selected] = np.where(demo_step[selected], 1.0, critic_weight[selected])
    return loss


@REFINE_METHODS.register("awr")
class Awr(StepRuleMethod):
    Args = AwrArgs
    args: AwrArgs

    def rule(self, steps: Steps) -> tuple[StepLabels, np.ndarray, dict[str, float]]:
        a, c = self.args, self.run_cfg.critic
        labels = build_step_labels(steps.store)
        returns = mc_returns(labels, steps.success, a.gamma)
        rollout = (labels.episode >= 0) & ~steps.is_demo[np.where(labels.episode >= 0, labels.episode, 0)]
        feats = step_features(c.features, steps.store, steps.model)
        ones = torch.from_numpy(rollout)
        critic, losses = train_critics(feats, torch.from_numpy(returns), torch.zeros_like(ones),
                                       torch.from_numpy(returns), ones, c, seed=self.run_cfg.seed + steps.version,
                                       episode=torch.from_numpy(labels.episode), gamma=a.gamma)
        _, values = critic_values(critic, feats)
        weight = awr_weights(returns, values.numpy(), a.beta, a.w_max)
        info = {"value_loss": losses["efficiency_loss"], "value_val_mae": losses["val_efficiency_mae"],
                "rollout_weight_mean": float(weight[rollout].mean()) if rollout.any() else 0.0}
        return labels, awr_loss(labels, steps.is_demo, weight), info
