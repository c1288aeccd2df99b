"""The VLA model: vision + language + proprio tokens -> transformer trunk -> flow-matching action
expert over a chunk of H actions (pi0-style, Black et al. arXiv 2410.24164).

Differences from pi0: the trunk is a small transformer trained from scratch (pi0 uses a
pretrained PaliGemma VLM), language enters as ONE frozen sentence embedding (all-MiniLM-L6-v2)
instead of token-level VLM features, and the action expert cross-attends to the trunk's output
tokens (pi0 shares attention layers between the VLM and the expert). The flow time is given per
action position, which is what training-time RTC needs (see `flow.py`).

API (no overloaded forward):
- `compute_loss(batch, generator) -> (loss, metrics)` on the training batch format.
- `encode(images, state, obs_mask, lang) -> (context, context_mask)` and
  `velocity(x, tau, context, context_mask)`: the two graphs the ONNX export uses.
- `sample_actions(...)`: K Euler steps with optional prefix and guidance, raw action units.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from vla.data.stats import Stats
from vla.policy import flow
from vla.policy.augment import parse_photometric, photometric, random_shift
from vla.policy.config import PolicyConfig
from vla.policy.encoders import ProprioEncoder, VisionEncoder
from vla.policy.language import InstructionEncoder, shared_encoder
from vla.policy.layers import Block, sinusoidal
from vla.policy.normalization import PolicyNormalizer
from vla.policy.rotation import features_dim, replace_quats

TensorGuidance = Callable[[torch.Tensor, float], torch.Tensor]


class VLAModel(nn.Module):
    def __init__(self, cfg: PolicyConfig, stats: dict[str, Stats] | None = None,
                 language: InstructionEncoder | None = None) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.language = language or shared_encoder()
        # the training phrasings grouped by meaning (each instruction with its aliases), saved with the
        # checkpoint: `instruction_vocab=checkpoint` grounds unseen instructions on them (vla.policy.grounding)
        self.instruction_groups: list[tuple[str, ...]] = []
        self.normalizer = PolicyNormalizer(cfg)
        # the training-time photometric draws, parsed once (the config validated the spec)
        self.photometric = parse_photometric(cfg.augment_photometric) if cfg.augment_photometric else {}
        if stats is not None:
            self.normalizer.set_stats(stats)
        self.vision = nn.ModuleDict({cam: VisionEncoder(cfg) for cam in cfg.cameras})
        self.proprio = ProprioEncoder(features_dim(cfg.state_dim, cfg.state_quats), d,
                                      cfg.language_dim if cfg.language_film else 0)
        self.lang_proj = nn.Linear(cfg.language_dim, d)
        if cfg.language_norm:  # set from the training instructions (set_language_stats), saved with the weights
            self.register_buffer("lang_mean", torch.zeros(cfg.language_dim))
            self.register_buffer("lang_scale", torch.ones(()))
        # Token-type and time embeddings tell the trunk which token is which.
        n_types = 2 + len(cfg.cameras)  # language, proprio, one per camera
        self.type_emb = nn.Parameter(torch.randn(n_types, d) * 0.02)
        self.obs_step_emb = nn.Parameter(torch.randn(cfg.n_obs_steps, d) * 0.02)
        self.trunk = nn.ModuleList(Block(d, cfg.n_heads, cfg.mlp_ratio, cfg.dropout, cross=False)
                                   for _ in range(cfg.trunk_layers))
        self.trunk_norm = nn.LayerNorm(d)
        self.action_in = nn.Linear(cfg.action_dim, d)
        self.action_pos = nn.Parameter(torch.randn(cfg.chunk_size, d) * 0.02)
        self.time_mlp = nn.Sequential(nn.Linear(d, d), nn.SiLU(), nn.Linear(d, d))
        self.expert = nn.ModuleList(Block(d, cfg.n_heads, cfg.mlp_ratio, cfg.dropout, cross=True)
                                    for _ in range(cfg.expert_layers))
        self.action_out = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, cfg.action_dim))
        if cfg.perception_dim > 0 and cfg.cameras:  # training only (see PolicyConfig.perception_dim)
            self.perception_head = nn.Linear(len(cfg.cameras) * cfg.vision_tokens * d, cfg.perception_dim)
        if cfg.future_state_weight > 0:  # training only (see PolicyConfig.future_state_weight)
            self.future_head = nn.Sequential(nn.Linear(d, d), nn.SiLU(),
                                             nn.Linear(d, features_dim(cfg.state_dim, cfg.state_quats)))

    # ----------------------------------------------------------------------------- graphs
    def encode(self, images: list[torch.Tensor], state: torch.Tensor, obs_mask: torch.Tensor,
               lang: torch.Tensor,
               camera_tokens: list[torch.Tensor] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Raw inputs -> trunk tokens [B, L, d] and their validity mask bool [B, L].

        images: per camera in config order (empty in state-only mode), uint8 or float [B, To, H, W, 3]
        in pixel units (resized to `image_size` when they differ); state [B, To, D] raw; obs_mask
        bool [B, To]; lang [B, 384]. A `camera_tokens` list receives each camera's tokens
        [B, To, T, d] before the trunk (the future-state head reads them).
        """
        cfg = self.cfg
        b, to = state.shape[:2]
        if self.cfg.language_norm:
            lang = (lang - self.lang_mean) / self.lang_scale
        tokens = [self.lang_proj(lang)[:, None] + self.type_emb[0]]
        masks = [torch.ones(b, 1, dtype=torch.bool, device=state.device)]
        step = self.obs_step_emb[None, -to:]
        film = lang if cfg.language_film else None
        proprio = replace_quats(state, self.normalizer.state(state), self.cfg.state_quats)
        tokens.append(self.proprio(proprio, film) + self.type_emb[1] + step)
        masks.append(obs_mask)
        for i in range(len(cfg.cameras)):
            img = images[i]
            cond = None if film is None else film.repeat_interleave(to, dim=0)  # one per image
            t = self.vision_tokens(i, img.reshape(b * to, *img.shape[-3:]), cond)  # [B*To, T, d]
            t = t.view(b, to, -1, t.shape[-1]) + step[:, :, None] + self.type_emb[2 + i]
            if camera_tokens is not None:
                camera_tokens.append(t)
            tokens.append(t.flatten(1, 2))
            masks.append(obs_mask[:, :, None].expand(b, to, t.shape[2]).flatten(1))
        x = torch.cat(tokens, dim=1)
        mask = torch.cat(masks, dim=1)
        for block in self.trunk:
            x = block(x, mask)
        return self.trunk_norm(x), mask

    def vision_tokens(self, cam_index: int, frames: torch.Tensor, cond: torch.Tensor | None = None) -> torch.Tensor:
        """Camera `cam_index`'s encoder on frames [N, H, W, 3] in pixel units: resized to `image_size`,
        normalised as the training data -> tokens [N, T, d] (no position or type embeddings)."""
        x = frames.permute(0, 3, 1, 2).float()
        if tuple(x.shape[-2:]) != self.cfg.image_size:
            x = F.interpolate(x, size=self.cfg.image_size, mode="bilinear", align_corners=False)
        return self.vision[self.cfg.cameras[cam_index]](self.normalizer.image(x, cam_index), cond)

    def velocity(self, x: torch.Tensor, tau: torch.Tensor, context: torch.Tensor,
                 context_mask: torch.Tensor) -> torch.Tensor:
        """Predicted velocity [B, H, A] for noisy normalised actions x at per-position times tau [B, H]."""
        h = self.action_in(x) + self.action_pos + self.time_mlp(sinusoidal(tau, self.cfg.d_model))
        for block in self.expert:
            h = block(h, None, context, context_mask)
        return self.action_out(h)

    # ----------------------------------------------------------------------------- inputs
    def set_language_stats(self, instructions: list[str]) -> None:
        """`language_norm`: the mean embedding of the distinct training instructions, and the RMS of
        their embeddings around it (one scale for all dimensions: a few dozen strings are too few to
        estimate 384 variances)."""
        if not self.cfg.language_norm:
            raise ValueError("set_language_stats needs a policy with language_norm: true")
        texts = sorted(set(instructions))
        if len(texts) < 2:
            raise ValueError(f"language_norm needs at least 2 distinct instructions, the data has {texts}")
        e = torch.from_numpy(self.language.encode(texts))
        mean = e.mean(0)
        self.lang_mean.copy_(mean)
        self.lang_scale.copy_(((e - mean) ** 2).mean().sqrt().clamp_min(1e-6))

    def language_embedding(self, instructions: list[str] | tuple[str, ...]) -> torch.Tensor:
        device = self.action_pos.device
        return torch.from_numpy(self.language.encode(list(instructions))).to(device)

    def stack_images(self, images: Mapping[str, torch.Tensor], batch: int, to: int) -> list[torch.Tensor]:
        """dict camera -> uint8 [B, To, H, W, 3] into a list in config order, checking names and shapes."""
        cams = self.cfg.cameras
        unknown = sorted(set(images) - set(cams))
        if unknown:
            known = ", ".join(cams) if cams else "none, state-only"
            raise KeyError(f"camera '{unknown[0]}' is not known to this policy (its cameras: {known})")
        missing = [c for c in cams if c not in images]
        if missing:
            raise KeyError(f"batch lacks camera '{missing[0]}' (the policy needs {cams})")
        device = self.action_pos.device
        out = []
        for c in cams:
            s = tuple(images[c].shape)
            if len(s) != 5 or s[:2] != (batch, to) or s[-1] != 3:
                raise ValueError(f"images['{c}'] has shape {s}, expected ({batch}, {to}, H, W, 3)")
            out.append(images[c].to(device))
        return out

    def _check_batch(self, batch: Mapping[str, Any]) -> None:
        cfg = self.cfg
        for key in ("state", "obs_mask", "action", "action_mask"):
            if key not in batch:
                raise KeyError(f"training batch lacks key '{key}'")
        if "lang" not in batch and "instruction" not in batch:
            raise KeyError("training batch lacks key 'instruction' (or a precomputed 'lang' embedding)")
        s, a = batch["state"], batch["action"]
        if s.dim() != 3 or s.shape[1] != cfg.n_obs_steps or s.shape[2] != cfg.state_dim:
            raise ValueError(f"batch['state'] has shape {tuple(s.shape)}, expected (B, {cfg.n_obs_steps}, "
                             f"{cfg.state_dim}) (n_obs_steps, state_dim)")
        if a.dim() != 3 or a.shape[1] < cfg.chunk_size or a.shape[2] != cfg.action_dim:
            raise ValueError(f"batch['action'] has shape {tuple(a.shape)}, expected (B, >= {cfg.chunk_size}, "
                             f"{cfg.action_dim}) (chunk_size, action_dim)")

    # ----------------------------------------------------------------------------- training
    def compute_loss(self, batch: Mapping[str, Any], generator: torch.Generator | None = None,
                     target_clip: float = 0.0, per_dim: bool = False) -> tuple[torch.Tensor, dict[str, float]]:
        """Flow-matching loss with random clean prefixes; padded and prefix positions excluded.
        `target_clip` > 0 clips the normalised action targets to that bound (`flow.clip_targets`);
        `per_dim` adds each action dimension's share of the loss as metrics `loss_dim<i>` (they average
        to the loss)."""
        self._check_batch(batch)
        cfg = self.cfg
        device = self.action_pos.device
        state = batch["state"].to(device).float()
        b, to = state.shape[:2]
        obs_mask = batch["obs_mask"].to(device).bool()
        images = self.stack_images(batch.get("images", {}), b, to)
        if self.training and cfg.augment_shift > 0:
            images = [random_shift(x, cfg.augment_shift, generator) for x in images]
        if self.training and self.photometric:
            images = [photometric(x, self.photometric, generator) for x in images]
        lang = batch["lang"].to(device) if "lang" in batch else self.language_embedding(batch["instruction"])
        cams: list[torch.Tensor] | None = [] if cfg.future_state_weight > 0 and cfg.cameras else None
        context, cmask = self.encode(images, state, obs_mask, lang, cams)

        h = cfg.chunk_size
        x1 = self.normalizer.action(batch["action"][:, :h].to(device).float())
        valid = batch["action_mask"][:, :h].to(device).bool()
        # Padded positions still enter the expert's self-attention, so their content must not be
        # whatever the loader put there: repeat the last valid action (diffusion_policy's padding).
        last = torch.where(valid, torch.arange(h, device=device), -1).cummax(dim=1).values.clamp_min(0)
        x1 = torch.gather(x1, 1, last[..., None].expand_as(x1))
        x1, was_clipped = flow.clip_targets(x1, target_clip)
        gen_device = generator.device if generator is not None else device
        x0 = torch.randn(x1.shape, generator=generator, device=gen_device).to(device)
        tau = flow.sample_tau(b, cfg.tau_beta_alpha, cfg.tau_max, generator, gen_device).to(device)
        d = flow.sample_prefix_len(b, cfg.max_prefix, cfg.prefix_prob, generator, gen_device).to(device)
        clean = flow.prefix_mask(d, h)
        tau_pos = torch.where(clean, torch.ones_like(tau[:, None]).expand(b, h), tau[:, None].expand(b, h))
        x_tau = flow.interpolate(x0, x1, tau_pos)
        v = self.velocity(x_tau, tau_pos, context, cmask)
        weight = (valid & ~clean).float()
        if "loss_weight" in batch:  # refinement: per-action weights (HABC / AWR), 0 = unsupervised
            weight = weight * batch["loss_weight"][:, :h].to(device).float()
        target = flow.target_velocity(x0, x1)
        loss = flow.masked_mse(v, target, weight)
        metrics = {"loss": float(loss.detach()), "prefix_len": float(d.float().mean()),
                   "valid_frac": float(weight.mean())}
        if cfg.future_state_weight > 0:
            if cams:  # [B, To, T, d] per camera -> [B, To * T_all, d], each frame's mask once per token
                tokens = torch.cat(cams, 2)
                mask = obs_mask.repeat_interleave(tokens.shape[2], 1)
                aux = self.future_state_loss(tokens.flatten(1, 2), mask, batch)
            else:
                aux = self.future_state_loss(context, cmask, batch)
            metrics.update(flow_loss=metrics["loss"], future_state_loss=float(aux.detach()))
            loss = loss + cfg.future_state_weight * aux
            metrics["loss"] = float(loss.detach())
        if per_dim:
            for i in range(target.shape[-1]):
                metrics[f"loss_dim{i}"] = float(flow.masked_mse(v[..., i:i + 1], target[..., i:i + 1], weight).detach())
        if target_clip > 0:  # how often the bound bites: in the logs beside the loss
            metrics["clipped_frac"] = float(was_clipped.any(dim=-1).float().mul(weight > 0).sum()
                                            / (weight > 0).sum().clamp_min(1))
        return loss, metrics

    def future_state_loss(self, tokens: torch.Tensor, mask: torch.Tensor, batch: Mapping[str, Any]) -> torch.Tensor:
        """MSE between the head's prediction from the mean of the valid `tokens` [B, L, d] and the
        normalised state features (quaternions as 6D rotation features) of `batch["future_state"]`
        [B, D]. compute_loss gives it the camera tokens before the trunk where there are cameras:
        from the trunk's output, the head could copy the hand's orientation from the proprio token
        (after the demos' first turn it no longer changes), and the encoder would again learn no yaw."""
        if "future_state" not in batch:
            raise KeyError("training batch lacks key 'future_state' (the policy's future_state_weight > 0 needs "
                           "the state each chunk led to; WindowDataset and LeRobotWindowDataset give it)")
        raw = batch["future_state"].to(tokens.device).float()
        if raw.shape != (tokens.shape[0], self.cfg.state_dim):
            raise ValueError(f"batch['future_state'] has shape {tuple(raw.shape)}, expected "
                             f"({tokens.shape[0]}, {self.cfg.state_dim})")
        m = mask.float()[..., None]
        pooled = (tokens * m).sum(1) / m.sum(1).clamp_min(1)
        target = replace_quats(raw, self.normalizer.state(raw), self.cfg.state_quats)
        return F.mse_loss(self.future_head(pooled), target)

    def perception_loss(self, images: Mapping[str, torch.Tensor], targets: torch.Tensor) -> torch.Tensor:
        """MSE of the perception head on labelled single frames: images per camera uint8 [N, H, W, 3],
        targets [N, perception_dim] (standardised). The frames go through the same camera encoders and
        image normalisation as the policy's observations, so what the targets need stays in them."""
        cfg = self.cfg
        if not hasattr(self, "perception_head"):
            raise ValueError("perception_loss needs a policy with cameras and perception_dim > 0")
        if targets.dim() != 2 or targets.shape[1] != cfg.perception_dim:
            raise ValueError(f"perception targets have shape {tuple(targets.shape)}, expected "
                             f"(N, {cfg.perception_dim})")
        stacked = self.stack_images({c: v[:, None] for c, v in images.items()}, len(targets), 1)
        feats = [self.vision_tokens(i, x[:, 0]).flatten(1) for i, x in enumerate(stacked)]
        return F.mse_loss(self.perception_head(torch.cat(feats, 1)), targets.to(feats[0]))

    # ----------------------------------------------------------------------------- inference
    @torch.no_grad()
    def sample_actions(self, images: list[torch.Tensor], state: torch.Tensor, obs_mask: torch.Tensor,
                       lang: torch.Tensor, prefix: torch.Tensor | None = None, noise: torch.Tensor | None = None,
                       guidance: TensorGuidance | None = None, guidance_vjp: bool = False,
                       num_steps: int | None = None, generator: torch.Generator | None = None) -> torch.Tensor:
        """Raw-unit actions [B, H, A]. `prefix` raw [B, P, A] (P < H) is reproduced exactly."""
        cfg = self.cfg
        b, h, a = state.shape[0], cfg.chunk_size, cfg.action_dim
        context, cmask = self.encode(images, state, obs_mask, lang)
        if noise is None:
            noise = torch.randn(b, h, a, generator=generator, device=generator.device if generator else None)
        if tuple(noise.shape) != (b, h, a):
            raise ValueError(f"noise has shape {tuple(noise.shape)}, expected {(b, h, a)}")
        x = noise.to(context.device).float() * cfg.noise_scale
        clean = torch.zeros(b, h, dtype=torch.bool, device=x.device)
        prefix_n = None
        if prefix is not None:
            p = check_prefix(tuple(prefix.shape), b, h, a)
            prefix_n = self.normalizer.action(prefix.to(x.device).float())
            clean[:, :p] = True
            x[:, :p] = prefix_n
        free = (~clean).float()[..., None]
        steps = num_steps or cfg.num_steps
        dt = 1.0 / steps
        for t in flow.euler_times(steps):
            tau = torch.where(clean, torch.ones(b, h, device=x.device), torch.full((b, h), t, device=x.device))
            if guidance is None:
                v = self.velocity(x, tau, context, cmask)
            else:
                v = v_guided(self, x, tau, t, context, cmask, guidance, guidance_vjp) * free
            x = x + dt * v * free
            if prefix_n is not None:
                x[:, : prefix_n.shape[1]] = prefix_n  # keep the committed actions bit-exact
        out = self.normalizer.unaction(x)
        if prefix is not None:
            out[:, : prefix.shape[1]] = prefix.to(out.device).float()
        return out


def v_guided(model: VLAModel, x: torch.Tensor, tau_pos: torch.Tensor, t: float, context: torch.Tensor,
             cmask: torch.Tensor, guidance: TensorGuidance, vjp: bool) -> torch.Tensor:
    """Velocity plus the pseudo-inverse guidance term (see flow.py): guidance works in action units,
    its desired change is divided by the action scale into normalised units."""
    norm = model.normalizer
    w = flow.guidance_weight(t, model.cfg.guidance_max_weight)
    if not vjp:
        v = model.velocity(x, tau_pos, context, cmask)
        delta = guidance(norm.unaction(flow.clean_estimate(x, v, t)), t) / norm.action_scale
        return v + w * delta.to(v)
    with torch.enable_grad():
        xg = x.detach().requires_grad_(True)
        v = model.velocity(xg, tau_pos, context, cmask)
        x1_hat = flow.clean_estimate(xg, v, t)
        delta = guidance(norm.unaction(x1_hat.detach()), t) / norm.action_scale
        (jt_delta,) = torch.autograd.grad(x1_hat, xg, grad_outputs=delta.to(x1_hat))
    return v.detach() + w * jt_delta


def check_prefix(shape: tuple[int, ...], b: int, h: int, a: int) -> int:
    if len(shape) != 3 or shape[0] != b or shape[2] != a:
        raise ValueError(f"prefix has shape {shape}, expected ({b}, P, {a}) with P < {h}")
    if shape[1] >= h:
        raise ValueError(f"prefix has {shape[1]} actions, must be fewer than the chunk size {h}")
    return int(shape[1])


def count_parameters(model: nn.Module, trainable_only: bool = True) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)
