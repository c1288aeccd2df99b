"""Observation encoders: a per-camera vision encoder (small CNN from scratch by default, or a
pretrained torchvision / Hugging Face backbone from a local path, never downloaded) and the
proprio encoder. Each vision encoder maps normalised images [N, 3, H, W] to `vision_tokens`
tokens of width d_model by pooling its last feature map to a sqrt(T) x sqrt(T) grid (as the
spatial-token variant of ResNet encoders in diffusion_policy / ACT, arXiv 2303.04137, 2304.13705),
plus, with `vision_keypoints`, spatial-softmax keypoints (where, not only what) added to them.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from vla.policy.config import PolicyConfig


class FiLM(nn.Module):
    """Feature-wise linear modulation by a condition vector (Perez et al. arXiv 1709.07871), as RT-1
    conditions its image encoder on the instruction (arXiv 2212.06817): x * (1 + gamma(c)) + beta(c)
    per channel. Zero-initialised, so a new model starts as the unconditioned one."""

    def __init__(self, cond_dim: int, channels: int) -> None:
        super().__init__()
        self.proj = nn.Linear(cond_dim, 2 * channels)
        nn.init.zeros_(self.proj.weight)
        nn.init.zeros_(self.proj.bias)

    def forward(self, x: torch.Tensor, cond: torch.Tensor, channel_dim: int) -> torch.Tensor:
        """x with channels at `channel_dim`; cond [N, cond_dim] for x's leading dimension N."""
        gamma, beta = self.proj(cond).chunk(2, dim=-1)
        shape = [x.shape[0]] + [1] * (x.dim() - 1)
        shape[channel_dim] = x.shape[channel_dim]
        return x * (1 + gamma.view(shape)) + beta.view(shape)


class SmallCNN(nn.Module):
    """Stride-2 conv blocks with GroupNorm (batch-size independent, unlike BatchNorm) and SiLU; with
    `cond_dim`, each block's output is FiLM-modulated by the condition (the instruction) before its
    last SiLU."""

    PER_BLOCK = 6  # conv, norm, silu, conv, norm, silu (indices of `net`, kept for old checkpoints)

    def __init__(self, channels: tuple[int, ...], cond_dim: int = 0) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        c_in = 3
        for c in channels:
            layers += [nn.Conv2d(c_in, c, 3, stride=2, padding=1), nn.GroupNorm(min(8, c), c), nn.SiLU(),
                       nn.Conv2d(c, c, 3, padding=1), nn.GroupNorm(min(8, c), c), nn.SiLU()]
            c_in = c
        self.net = nn.Sequential(*layers)
        self.films = nn.ModuleList(FiLM(cond_dim, c) for c in channels) if cond_dim else None
        self.out_channels = c_in

    def forward(self, x: torch.Tensor, cond: torch.Tensor | None = None) -> torch.Tensor:
        if self.films is None or cond is None:
            return self.net(x)
        for i, layer in enumerate(self.net):
            x = layer(x)
            if i % self.PER_BLOCK == self.PER_BLOCK - 2:
                x = self.films[i // self.PER_BLOCK](x, cond, 1)
        return x


def _torchvision_trunk(arch: str, weights: str) -> nn.Module:
    path = Path(weights)
    if not path.is_file():
        raise FileNotFoundError(f"vision_weights file not found: {path} (a local .safetensors file)")
    try:
        import torchvision
    except ImportError as e:
        raise ImportError("vision_backbone 'torchvision' needs torchvision installed (pin it to the "
                          "installed torch version)") from e
    from safetensors.torch import load_file

    if not hasattr(torchvision.models, arch):
        raise ValueError(f"vision_arch '{arch}' is not a torchvision.models constructor")
    model = getattr(torchvision.models, arch)(weights=None)
    model.load_state_dict(load_file(str(path)))
    # Keep the convolutional trunk: `.features` (VGG, EfficientNet, ConvNeXt) or all but pool + fc.
    return model.features if hasattr(model, "features") else nn.Sequential(*list(model.children())[:-2])


class _HFTrunk(nn.Module):
    def __init__(self, folder: str) -> None:
        super().__init__()
        path = Path(folder)
        if not path.is_dir():
            raise FileNotFoundError(f"vision_weights folder not found: {path} (a local Hugging Face model "
                                    "folder with config.json and model.safetensors)")
        from transformers import AutoModel

        self.model = AutoModel.from_pretrained(str(path), local_files_only=True, use_safetensors=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.model(pixel_values=x)
        h = out.last_hidden_state
        if h.dim() == 3:  # ViT-style [N, L, C]: drop a class token if L is not a square
            n = h.shape[1]
            side = math.isqrt(n)
            if side * side != n:
                h = h[:, 1:]
                side = math.isqrt(h.shape[1])
            h = h.transpose(1, 2).reshape(h.shape[0], h.shape[2], side, -1)
        return h


def spatial_soft_argmax(logits: torch.Tensor, temperature: torch.Tensor | float = 1.0) -> torch.Tensor:
    """logits [N, K, H, W] -> [N, K, 2]: each map's expected (x, y) under a softmax over its H*W cells,
    in [-1, 1] (cell centres; -1 the left / top edge's cell). Levine et al. arXiv 1504.00702; robomimic's
    SpatialSoftmax. Differentiable and sub-cell: a peak between two cells lands between them."""
    n, k, h, w = logits.shape
    prob = torch.softmax(logits.reshape(n, k, h * w) / temperature, dim=-1)
    ys = torch.linspace(-1.0, 1.0, h, dtype=logits.dtype, device=logits.device)
    xs = torch.linspace(-1.0, 1.0, w, dtype=logits.dtype, device=logits.device)
    grid = torch.stack([xs.repeat(h), ys.repeat_interleave(w)], dim=-1)  # [H*W, 2], row-major like reshape
    return prob @ grid


class VisionEncoder(nn.Module):
    """One camera: backbone -> pooled grid -> linear projection + learned position embedding."""

    def __init__(self, cfg: PolicyConfig) -> None:
        super().__init__()
        cond = cfg.language_dim if cfg.language_film else 0
        self.film: FiLM | None = None
        if cfg.vision_backbone == "cnn":
            self.backbone: nn.Module = SmallCNN(cfg.vision_channels, cond)
        elif cfg.vision_backbone == "torchvision":
            self.backbone = _torchvision_trunk(cfg.vision_arch, cfg.vision_weights)
        elif cfg.vision_backbone == "efficientnet_lite0":
            from vla.policy.efficientnet import EfficientNetLite0, load_pretrained

            self.backbone = EfficientNetLite0(cfg.vision_stages)
            load_pretrained(self.backbone, cfg.vision_weights or None)
            if cfg.vision_frozen_blocks:
                self.backbone.freeze(cfg.vision_frozen_blocks)
        else:
            self.backbone = _HFTrunk(cfg.vision_weights)
        if cfg.freeze_vision:
            self.backbone.requires_grad_(False)
        with torch.no_grad():
            channels = self.backbone(torch.zeros(1, 3, *cfg.image_size)).shape[1]
        if cond and cfg.vision_backbone != "cnn":  # a pretrained trunk is modulated at its output
            self.film = FiLM(cond, channels)
        self.side = math.isqrt(cfg.vision_tokens)
        self.proj = nn.Linear(channels, cfg.d_model)
        self.pos = nn.Parameter(torch.randn(cfg.vision_tokens, cfg.d_model) * 0.02)
        self.keypoints: nn.Conv2d | None = None
        if cfg.vision_keypoints:
            self.keypoints = nn.Conv2d(channels, cfg.vision_keypoints, 1)
            self.log_temperature = nn.Parameter(torch.zeros(()))
            # every token gets its own view of all keypoints
            self.kp_proj = nn.Linear(2 * cfg.vision_keypoints, cfg.vision_tokens * cfg.d_model)

    def forward(self, x: torch.Tensor, cond: torch.Tensor | None = None) -> torch.Tensor:
        """x float [N, 3, H, W] normalised -> tokens [N, T, d]; cond [N, language_dim] with
        `language_film`."""
        if isinstance(self.backbone, SmallCNN):
            f = self.backbone(x, cond)
        else:
            f = self.backbone(x)
            if self.film is not None and cond is not None:
                f = self.film(f, cond, 1)
        tokens = self.proj(F.adaptive_avg_pool2d(f, self.side).flatten(2).transpose(1, 2)) + self.pos
        if self.keypoints is not None:
            kp = spatial_soft_argmax(self.keypoints(f), self.log_temperature.exp())
            tokens = tokens + self.kp_proj(kp.flatten(1)).view_as(tokens)
        return tokens


class ProprioEncoder(nn.Module):
    """state [B, To, D] -> [B, To, d]; with `cond_dim`, the hidden layer is FiLM-modulated by the
    condition [B, cond_dim], so the instruction can pick which of the state's objects matter."""

    def __init__(self, state_dim: int, d: int, cond_dim: int = 0) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(state_dim, d), nn.SiLU(), nn.Linear(d, d))
        self.film = FiLM(cond_dim, d) if cond_dim else None

    def forward(self, state: torch.Tensor, cond: torch.Tensor | None = None) -> torch.Tensor:
        if self.film is None or cond is None:
            return self.net(state)
        h = self.film(self.net[0](state), cond, state.dim() - 1)
        return self.net[2](self.net[1](h))
