"""The action-conditioned latent world model: `encode / next / success / value / state`, in the
style of TD-MPC2 (Hansen et al., arXiv 2310.16828): decoder-free, a SimNorm latent, MLPs with
LayerNorm + Mish.

- encode(obs) -> z: the state (normalised; optionally only its first `state_inputs` dims, e.g. the
  proprio when the object pose must come from the cameras) and, with cameras, a small CNN per
  camera.
- next(z, chunk) -> z' for every member of an ensemble of E dynamics heads (one action chunk per
  step); their disagreement is the model's uncertainty.
- heads on any latent: success (did the task succeed during the chunk that led here), value
  (discounted success-to-go, a progress measure) and state (the full stored state, whose object
  dims are the privileged-pose probe, read in metres; it is also what a state policy sees in
  imagination).
Ours differs from TD-MPC2: no reward/Q/policy heads (the policy is the VLA, outside), a
success-event head instead of a reward, and an ensemble of dynamics instead of one.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from worldmodel.config import WorldModelConfig
from worldmodel.losses import simnorm

STATE_CLAMP = 20.0


def mlp(inp: int, hidden: int, out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inp, hidden), nn.LayerNorm(hidden), nn.Mish(),
                         nn.Linear(hidden, hidden), nn.LayerNorm(hidden), nn.Mish(), nn.Linear(hidden, out))


class EnsembleLinear(nn.Module):
    """E independent linear layers applied at once: x [E, N, in] -> [E, N, out]."""

    def __init__(self, members: int, inp: int, out: int) -> None:
        super().__init__()
        bound = 1 / math.sqrt(inp)
        self.weight = nn.Parameter(torch.empty(members, inp, out).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(members, 1, out).uniform_(-bound, bound))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)


class EnsembleDynamics(nn.Module):
    def __init__(self, members: int, inp: int, hidden: int, out: int) -> None:
        super().__init__()
        self.l1, self.l2, self.l3 = (EnsembleLinear(members, inp, hidden), EnsembleLinear(members, hidden, hidden),
                                     EnsembleLinear(members, hidden, out))
        self.n1, self.n2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.act = nn.Mish()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l3(self.act(self.n2(self.l2(self.act(self.n1(self.l1(x)))))))


class ConvEncoder(nn.Module):
    """uint8 [N, S, S, 3] -> features [N, out] (S >= 32)."""

    def __init__(self, size: int, out: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 32, 4, 2), nn.Mish(), nn.Conv2d(32, 64, 4, 2), nn.Mish(),
                                 nn.Conv2d(64, 64, 3, 2), nn.Mish(), nn.Conv2d(64, 64, 3, 1, padding=1), nn.Mish(),
                                 nn.Flatten())
        with torch.no_grad():
            n = self.net(torch.zeros(1, 3, size, size)).shape[1]
        self.out = nn.Linear(n, out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.net(x.permute(0, 3, 1, 2).float() / 127.5 - 1.0))


class WorldModel(nn.Module):
    def __init__(self, cfg: WorldModelConfig) -> None:
        super().__init__()
        if cfg.state_dim < 1 or cfg.action_dim < 1:
            raise ValueError("WorldModelConfig.state_dim and action_dim must be set (from the store)")
        self.cfg = cfg
        d, h, latent = cfg.state_dim, cfg.hidden, cfg.latent_dim
        self.n_state_in = cfg.state_inputs or d
        self.register_buffer("state_mean", torch.zeros(d))
        self.register_buffer("state_std", torch.ones(d))
        self.cams = nn.ModuleList(ConvEncoder(cfg.image_size, h) for _ in cfg.cameras)
        self.state_enc = nn.Sequential(nn.Linear(self.n_state_in, h), nn.LayerNorm(h), nn.Mish())
        self.enc = mlp(h * (1 + len(cfg.cameras)), h, latent)
        self.dynamics = EnsembleDynamics(cfg.ensemble, latent + cfg.chunk * cfg.action_dim, h, latent)
        self.success_head = mlp(latent, h, 1)
        self.value_head = mlp(latent, h, 1)
        self.state_head = mlp(latent, h, d)

    # ---- normalisation ----------------------------------------------------------------------------
    def set_stats(self, mean: torch.Tensor, std: torch.Tensor) -> None:
        self.state_mean.copy_(mean)
        self.state_std.copy_(std.clamp_min(0.02))  # 2 cm, 0.02 of a unit quaternion

    def norm_state(self, state: torch.Tensor) -> torch.Tensor:
        """Normalised and clamped to +-20 scale units: a physics glitch (a cube launched to z = 170 m, seen in
        ~10% of noisy-expert pick_place episodes) would otherwise be ~1e4 std and its squared error
        would drown every other target."""
        return ((state - self.state_mean) / self.state_std).clamp(-STATE_CLAMP, STATE_CLAMP)

    def unnorm_state(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.state_std + self.state_mean

    # ---- the model --------------------------------------------------------------------------------
    def encode(self, state: torch.Tensor, images: torch.Tensor | None = None) -> torch.Tensor:
        """state [..., D] raw; images uint8 [..., n_cams, S, S, 3] -> latent [..., L]."""
        lead = state.shape[:-1]
        feats = [self.state_enc(self.norm_state(state)[..., : self.n_state_in].reshape(-1, self.n_state_in))]
        if self.cfg.cameras:
            if images is None:
                raise ValueError(f"this world model needs images of cameras {self.cfg.cameras}")
            flat = images.reshape(-1, *images.shape[-4:])
            feats += [enc(flat[:, i]) for i, enc in enumerate(self.cams)]
        z = self.enc(torch.cat(feats, -1))
        return simnorm(z, self.cfg.simnorm_groups).reshape(*lead, -1)

    def next(self, z: torch.Tensor, chunk: torch.Tensor) -> torch.Tensor:
        """z [E, B, L] (one latent per member) or [B, L] (shared), chunk [B, c, A] in [-1, 1] ->
        [E, B, L]."""
        e = self.cfg.ensemble
        if z.dim() == 2:
            z = z.unsqueeze(0).expand(e, *z.shape)
        a = chunk.clamp(-1, 1).reshape(1, chunk.shape[0], -1).expand(e, -1, -1)
        return simnorm(self.dynamics(torch.cat([z, a], -1)), self.cfg.simnorm_groups)

    def success_logit(self, z: torch.Tensor) -> torch.Tensor:
        return self.success_head(z).squeeze(-1)

    def value_logit(self, z: torch.Tensor) -> torch.Tensor:
        return self.value_head(z).squeeze(-1)

    def state(self, z: torch.Tensor) -> torch.Tensor:
        """Predicted raw state [..., D]."""
        return self.unnorm_state(self.state_head(z))

    def unroll(self, z0: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """z0 [B, L], actions [B, H, c, A] -> every member's latents after each chunk [E, B, H, L]."""
        z, out = z0, []
        for k in range(actions.shape[1]):
            z = self.next(z, actions[:, k])
            out.append(z)
        return torch.stack(out, 2)
