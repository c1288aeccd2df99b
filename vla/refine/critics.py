"""The critics refinement methods fit on per-step features: an ensemble of two-headed networks
(viability logits, efficiency in (0, 1)) that HABC reads as its two critics, AWR as a value (the
efficiency head on Monte-Carlo returns) and PA-RL as Q (the step's features with its executed chunk).

Paper: HABC, arXiv 2606.17043; the targets, losses and advantages are written down in
`vla.refine.habc_math`. The input is a per-step feature vector (`vla.refine.features`: proprio and
object state with the instruction embedding, or the frozen policy encoder's features when images
matter). Generalisation: an ensemble of `ensemble` critics (different seeds; their spread is the
uncertainty), each stopped early on the loss of held-out episodes (`val_fraction` of the labelled
episodes, scored against their Monte-Carlo labels), and TD(lambda) targets that vary inside a
segment (`lam`, `td_rounds`: refit on targets bootstrapped from the previous fit). `train_critics`
reports the held-out viability AUROC and efficiency error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from vla.refine import habc_math as hm

FEATURES = ("state", "encoder")


@dataclass
class CriticConfig:
    """How a method's critic is fitted (HABC's two heads, AWR's value, PA-RL's Q): `critic.*` of a run."""

    features: str = "state"  # critic input: state vector, or the frozen policy encoder's mean token + state
    hidden: int = 256
    layers: int = 2
    lr: float = 3e-4
    steps: int = 2000
    batch_size: int = 256
    ensemble: int = 3  # critics with different seeds; the spread of their viability is the uncertainty
    val_fraction: float = 0.2  # labelled episodes held out for early stopping and the reported AUROC
    eval_every: int = 100  # steps between held-out evaluations
    patience: int = 5  # held-out evaluations without improvement before a critic stops
    lam: float = 0.8  # TD(lambda) targets inside a segment; 1 = the segment's own label everywhere
    td_rounds: int = 2  # fits: the first on Monte-Carlo labels, each next on targets bootstrapped from it

    def validate(self) -> None:
        if self.features not in FEATURES:
            raise ValueError(f"critic.features must be one of {FEATURES}, got '{self.features}'")


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


class CriticEnsemble(nn.Module):
    """Members' mean: viability as the logit of the mean probability, efficiency as the mean."""

    def __init__(self, members: list[TwinCritic], mean: torch.Tensor, std: torch.Tensor) -> None:
        super().__init__()
        self.members = nn.ModuleList(members)
        self.register_buffer("feature_mean", mean)
        self.register_buffer("feature_std", std)

    def forward_members(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(viability probabilities [E, N], efficiency [E, N])."""
        outs = [m.forward_heads(x) for m in self.members]
        return torch.stack([torch.sigmoid(v) for v, _ in outs]), torch.stack([e for _, e in outs])

    def forward_heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        p, e = self.forward_members(x)
        return torch.logit(p.mean(0).clamp(1e-6, 1 - 1e-6)), e.mean(0)


def split_episodes(episode: torch.Tensor | None, labelled: torch.Tensor, fraction: float, seed: int
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """(train rows, held-out rows) of the labelled rows: whole episodes are held out, at least one
    kept for training; no held-out rows without episode ids or with fewer than 2 episodes."""
    rows = torch.nonzero(labelled).squeeze(-1)
    if episode is None or fraction <= 0:
        return rows, rows[:0]
    eps = torch.unique(episode[rows])
    n_val = min(round(fraction * len(eps)), len(eps) - 1)
    if n_val < 1:
        return rows, rows[:0]
    gen = torch.Generator().manual_seed(seed)
    val_eps = eps[torch.randperm(len(eps), generator=gen)[:n_val]]
    is_val = torch.isin(episode[rows], val_eps)
    return rows[~is_val], rows[is_val]


def _fit_member(x: torch.Tensor, targets: tuple[torch.Tensor, ...], masks: tuple[torch.Tensor, torch.Tensor],
                val_targets: tuple[torch.Tensor, torch.Tensor], train_rows: torch.Tensor, val_rows: torch.Tensor,
                cfg: CriticConfig, seed: int, single_critic: bool) -> tuple[TwinCritic, dict[str, float]]:
    (v_t, e_t), (v_m, e_m), (v_mc, e_mc) = targets, masks, val_targets
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    critic = TwinCritic(x.shape[1], cfg.hidden, cfg.layers)
    opt = torch.optim.AdamW(critic.parameters(), lr=cfg.lr)
    w_e = 0.0 if single_critic else 1.0

    def losses(idx: torch.Tensor, vt: torch.Tensor, et: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, eff = critic.forward_heads(x[idx])
        return hm.viability_loss(logits, vt[idx], v_m[idx]), hm.efficiency_loss(eff, et[idx], e_m[idx])

    best, best_state, best_step, bad = float("inf"), None, cfg.steps, 0
    last = {"viability_loss": 0.0, "efficiency_loss": 0.0}
    for step in range(1, cfg.steps + 1):
        idx = train_rows[torch.randint(len(train_rows), (min(cfg.batch_size, len(train_rows)),), generator=gen)]
        lv, le = losses(idx, v_t, e_t)
        opt.zero_grad()
        (lv + w_e * le).backward()
        opt.step()
        last = {"viability_loss": float(lv.detach()), "efficiency_loss": float(le.detach())}
        if len(val_rows) and (step % cfg.eval_every == 0 or step == cfg.steps):
            with torch.no_grad():
                vl, ve = losses(val_rows, v_mc, e_mc)
            val = float(vl + w_e * ve)
            if val < best - 1e-6:
                best, best_step, bad = val, step, 0
                best_state = {k: t.clone() for k, t in critic.state_dict().items()}
            else:
                bad += 1
                if bad >= cfg.patience:
                    break
    if best_state is not None:
        critic.load_state_dict(best_state)
    return critic.eval(), {**last, "best_step": float(best_step), "val_loss": best}


def train_critics(features: torch.Tensor, viability: torch.Tensor, viability_mask: torch.Tensor,
                  efficiency: torch.Tensor, efficiency_mask: torch.Tensor, cfg: CriticConfig,
                  seed: int = 0, episode: torch.Tensor | None = None, next_index: torch.Tensor | None = None,
                  gamma: float = 0.98, single_critic: bool = False) -> tuple[CriticEnsemble, dict[str, float]]:
    """Fit the ensemble on per-step features. `episode` (per row) enables the held-out split and
    `next_index` the TD(lambda) rounds (without them: every labelled row trains, Monte-Carlo targets);
    `gamma` discounts the efficiency targets; `single_critic` trains the viability head alone.
    Returns the ensemble and its figures: final training losses, held-out viability AUROC and loss,
    efficiency MAE, the uncertainty (members' std of viability) and the early-stopping step."""
    from vla.metrics import auroc

    if features.ndim != 2 or len(features) != len(viability):
        raise ValueError(f"features must be [N, F] with N = {len(viability)}, got {tuple(features.shape)}")
    if cfg.ensemble < 1 or cfg.td_rounds < 1 or not 0 <= cfg.val_fraction < 1:
        raise ValueError("critic: need ensemble >= 1, td_rounds >= 1 and 0 <= val_fraction < 1")
    labelled = viability_mask | efficiency_mask
    if not labelled.any():
        raise ValueError("no labelled steps: the critics need rollouts of the current policy")
    mean, std = features.mean(0), features.std(0).clamp_min(1e-6)
    x = (features - mean) / std
    train_rows, val_rows = split_episodes(episode, labelled, cfg.val_fraction, seed)
    masks = (viability_mask, efficiency_mask)
    mc = (viability.float(), efficiency.float())
    targets = mc
    rounds = cfg.td_rounds if next_index is not None and cfg.lam < 1 else 1
    infos: list[dict[str, float]] = []
    for r in range(rounds):
        members, infos = [], []
        for m in range(cfg.ensemble):
            critic, info = _fit_member(x, targets, masks, mc, train_rows, val_rows, cfg, seed * 1009 + 97 * r + m,
                                       single_critic)
            members.append(critic)
            infos.append(info)
        ensemble = CriticEnsemble(members, mean, std)
        if r + 1 < rounds:
            assert next_index is not None
            with torch.no_grad():
                logits, eff = ensemble.forward_heads(x)
            nxt = next_index.numpy()
            v_next, e_next = torch.sigmoid(logits).numpy()[nxt], eff.numpy()[nxt]
            g = gamma
            targets = (torch.from_numpy(hm.lambda_targets(mc[0].numpy(), v_next, viability_mask.numpy(), nxt, 1.0,
                                                          cfg.lam)),
                       torch.from_numpy(hm.lambda_targets(mc[1].numpy(), e_next, efficiency_mask.numpy(), nxt, g,
                                                          cfg.lam)))
    out = {k: float(np.mean([i[k] for i in infos])) for k in ("viability_loss", "efficiency_loss", "best_step")}
    with torch.no_grad():
        probs, eff = ensemble.forward_members(x)
    p, e = probs.mean(0).numpy(), eff.mean(0).numpy()
    vm, em = viability_mask.numpy(), efficiency_mask.numpy()
    for name, rows in (("train", train_rows.numpy()), ("val", val_rows.numpy())):
        rv, re = rows[vm[rows]], rows[em[rows]]
        out[f"{name}_viability_auroc"] = auroc(p[rv], mc[0].numpy()[rv] > 0.5) if len(rv) else float("nan")
        out[f"{name}_efficiency_mae"] = float(np.abs(e[re] - mc[1].numpy()[re]).mean()) if len(re) else float("nan")
    out["val_loss"] = float(np.mean([i["val_loss"] for i in infos])) if len(val_rows) else float("nan")
    out["viability_uncertainty"] = float(probs.std(0)[labelled].mean()) if cfg.ensemble > 1 else 0.0
    out["val_steps"], out["td_rounds"] = float(len(val_rows)), float(rounds)
    return ensemble.eval(), out


@torch.no_grad()
def critic_values(critic: TwinCritic | CriticEnsemble, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(viability probability [N], efficiency [N]) of a fitted critic on raw per-step features."""
    logits, eff = critic.forward_heads((features - critic.feature_mean) / critic.feature_std)
    return torch.sigmoid(logits), eff
