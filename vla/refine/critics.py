"""HABC's two critic heads and the per-transition BC weights they produce.

Paper: HABC, arXiv 2606.17043; the formulation (losses, gate, advantages) is written down in
`vla.refine.habc_math`. The critics here read a per-step feature vector (proprio/object state and
the instruction embedding, or the frozen policy encoder's features when images matter) and share
a trunk with two heads: viability logits and efficiency in (0, 1). `single_critic=True` (an
ablation) ties both to the viability head, `use_gate=False` fixes the gate at 0.5 and
`mask_interventions=False` labels every rollout step with the episode outcome and
`scale_by_viability=False` drops the V(s') factor on the policy steps' weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from vla.refine import habc_math as hm


@dataclass
class CriticConfig:
    hidden: int = 256
    layers: int = 2
    lr: float = 3e-4
    steps: int = 2000
    batch_size: int = 256
    gamma: float = 0.98
    v_low: float = 0.3
    v_high: float = 0.8
    beta: float = 1.0
    w_max: float = 20.0
    demo_weight: float = 1.0
    use_gate: bool = True
    single_critic: bool = False
    mask_interventions: bool = True
    scale_by_viability: bool = True  # HABC: policy-step weights times V(s') (vla.refine.habc_math)


class TwinCritic(nn.Module):
    def __init__(self, in_dim: int, hidden: int = 256, layers: int = 2) -> None:
        super().__init__()
        blocks: list[nn.Module] = []
        d = in_dim
        for _ in range(layers):
            blocks += [nn.Linear(d, hidden), nn.LayerNorm(hidden), nn.Mish()]
            d = hidden
        self.trunk = nn.Sequential(*blocks)
        self.viability_head = nn.Linear(d, 1)
        self.efficiency_head = nn.Linear(d, 1)

    def forward_heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(viability logits [N], efficiency in (0, 1) [N])."""
        h = self.trunk(x)
        return self.viability_head(h).squeeze(-1), torch.sigmoid(self.efficiency_head(h)).squeeze(-1)


def train_critics(features: torch.Tensor, viability: torch.Tensor, viability_mask: torch.Tensor,
                  efficiency: torch.Tensor, efficiency_mask: torch.Tensor, cfg: CriticConfig,
                  seed: int = 0) -> tuple[TwinCritic, dict[str, float]]:
    """Fit both heads on per-step features; returns the critic and its final losses."""
    if features.ndim != 2 or len(features) != len(viability):
        raise ValueError(f"features must be [N, F] with N = {len(viability)}, got {tuple(features.shape)}")
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    critic = TwinCritic(features.shape[1], cfg.hidden, cfg.layers)
    opt = torch.optim.AdamW(critic.parameters(), lr=cfg.lr)
    mean, std = features.mean(0), features.std(0).clamp_min(1e-6)
    critic.register_buffer("feature_mean", mean)
    critic.register_buffer("feature_std", std)
    rows = torch.nonzero(viability_mask | efficiency_mask).squeeze(-1)
    if len(rows) == 0:
        raise ValueError("no labelled steps: the critics need rollouts of the current policy")
    last = {"viability_loss": 0.0, "efficiency_loss": 0.0}
    for _ in range(cfg.steps):
        idx = rows[torch.randint(len(rows), (min(cfg.batch_size, len(rows)),), generator=gen)]
        logits, eff = critic.forward_heads((features[idx] - mean) / std)
        lv = hm.viability_loss(logits, viability[idx], viability_mask[idx])
        le = hm.efficiency_loss(eff, efficiency[idx], efficiency_mask[idx])
        loss = lv + (0.0 if cfg.single_critic else 1.0) * le
        opt.zero_grad()
        loss.backward()
        opt.step()
        last = {"viability_loss": float(lv.detach()), "efficiency_loss": float(le.detach())}
    return critic.eval(), last


@torch.no_grad()
def habc_weights(critic: TwinCritic, features: torch.Tensor, next_index: torch.Tensor, done_success: torch.Tensor,
                 is_intervention: torch.Tensor, cfg: CriticConfig,
                 scale_rows: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """Per-step BC weights (and the terms behind them) for every row of `features`.
    `scale_rows` (bool): the rows whose advantage spread sets the scale (the policy's steps:
    demo rows would otherwise dilute it); default all."""
    x = (features - critic.feature_mean) / critic.feature_std
    logits, eff = critic.forward_heads(x)
    v = torch.sigmoid(logits)
    if cfg.single_critic:
        eff = v
    v_next, e_next = v[next_index], eff[next_index]
    a_v = hm.viability_advantage(v, v_next)
    a_e = hm.efficiency_advantage(eff, e_next, done_success, cfg.gamma)
    g = hm.gate(v, cfg.v_low, cfg.v_high) if cfg.use_gate else torch.full_like(v, 0.5)
    if cfg.single_critic:
        g = torch.zeros_like(v)
    rows = torch.ones_like(v, dtype=torch.bool) if scale_rows is None else scale_rows.bool()
    if rows.sum() >= 2:
        a_v, a_e = a_v / (a_v[rows].std() + 1e-6), a_e / (a_e[rows].std() + 1e-6)
    adv = hm.merged_advantage(a_v, a_e, g, normalise=False)
    reached = torch.where(done_success.bool(), torch.ones_like(v_next), v_next)  # a success is viable
    w = hm.bc_weights(adv, is_intervention, cfg.beta, cfg.w_max, cfg.demo_weight,
                      viability_next=reached if cfg.scale_by_viability else None)
    return {"weight": w, "advantage": adv, "gate": g, "viability": v, "efficiency": eff}
