"""The torch policy: the `Policy` protocol (vla/interfaces.py) over a `VLAModel`.

`sample_chunk(obs_batch, prefix, guidance)` validates the observations, keeps the observation
history, embeds the instructions (cached) and runs the K-step sampler; results are float32 numpy
arrays in raw action units. Noise comes from the policy's own numpy generator, seeded at
construction and at `reset()`, so the same seed gives the same chunks; it is the stream the ONNX
policy draws (vla/policy/export.py), so a checkpoint and its export give the same episodes for the
same seeds (once, from two streams, the same policy scored 31/50 and 20/50 on the same scenes).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from vla.interfaces import GuidanceFn, Observation
from vla.policy.checkpoint import load_model
from vla.policy.model import VLAModel, check_prefix
from vla.policy.observation import ObservationHistory


class TorchPolicy:
    def __init__(self, model: VLAModel, seed: int = 0, guidance_vjp: bool = False,
                 num_steps: int | None = None) -> None:
        self.model = model.eval()
        self.cfg = model.cfg
        self.seed = seed
        self.guidance_vjp = guidance_vjp
        self.num_steps = num_steps
        self.device = next(model.parameters()).device
        self.history = ObservationHistory(self.cfg.cameras, self.cfg.state_dim, self.cfg.n_obs_steps)
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Clear the observation history and restart the sampling noise (from `seed` when given:
        the evaluator passes the episode's seed, so an episode does not depend on the worker)."""
        self.history.reset()
        if seed is not None:
            self.seed = seed
        self.rng = np.random.default_rng(self.seed)

    def sample_chunk(self, obs_batch: Sequence[Observation], prefix: np.ndarray | None = None,
                     guidance: GuidanceFn | None = None, noise: np.ndarray | None = None) -> np.ndarray:
        inputs = self.history.push(obs_batch)
        b, h, a = len(obs_batch), self.cfg.chunk_size, self.cfg.action_dim
        lang = torch.from_numpy(self.model.language.encode(inputs.instructions)).to(self.device)
        prefix_t = None
        if prefix is not None:
            prefix = np.asarray(prefix, np.float32)
            check_prefix(prefix.shape, b, h, a)
            if not np.isfinite(prefix).all():
                raise ValueError("prefix has non-finite values")
            prefix_t = torch.from_numpy(prefix).to(self.device)
        if noise is None:
            noise_t = torch.from_numpy(self.rng.standard_normal((b, h, a)).astype(np.float32))
        else:
            noise_t = torch.as_tensor(np.asarray(noise, np.float32))
        torch_guidance = None
        if guidance is not None:
            def torch_guidance(x1: torch.Tensor, tau: float) -> torch.Tensor:
                delta = np.asarray(guidance(x1.detach().cpu().numpy(), tau), np.float32)
                if delta.shape != tuple(x1.shape):
                    raise ValueError(f"guidance returned shape {delta.shape}, expected {tuple(x1.shape)}")
                return torch.from_numpy(delta).to(x1.device)

        out = self.model.sample_actions(
            [torch.from_numpy(im).to(self.device) for im in inputs.images],
            torch.from_numpy(inputs.state).to(self.device), torch.from_numpy(inputs.obs_mask).to(self.device),
            lang, prefix=prefix_t, noise=noise_t, guidance=torch_guidance, guidance_vjp=self.guidance_vjp,
            num_steps=self.num_steps)
        return out.cpu().numpy().astype(np.float32)


def load_torch_policy(path: str | Path, device: str = "cpu", use_ema: bool = True, seed: int = 0,
                guidance_vjp: bool = False, noise_scale: float | None = None) -> TorchPolicy:
    """A checkpoint folder -> a ready `Policy` (EMA weights when the checkpoint has them);
    `noise_scale` overrides the checkpoint's `policy.noise_scale`."""
    model, _ = load_model(path, use_ema=use_ema, device=device)
    model.cfg.with_noise_scale(noise_scale)
    return TorchPolicy(model, seed=seed, guidance_vjp=guidance_vjp)
