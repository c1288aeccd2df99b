"""Observation encoders: a per-camera vision encoder (small CNN from scratch by default, or a
pretrained torchvision / Hugging Face backbone from a local path, never downloaded) and the
proprio encoder. Each vision encoder maps normalised images [N, 3, H, W] to `vision_tokens`
tokens of width d_model by pooling its last feature map to a sqrt(T) x sqrt(T) grid (as the
spatial-token variant of ResNet encoders in diffusion_policy / ACT, arXiv 2303.04137, 2304.13705).
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from vla.policy.config import PolicyConfig


class SmallCNN(nn.Module):
    """Stride-2 conv blocks with GroupNorm (batch-size independent, unlike BatchNorm) and SiLU."""

    def __init__(self, channels: tuple[int, ...]) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        c_in = 3
        for c in channels:
            layers += [nn.Conv2d(c_in, c, 3, stride=2, padding=1), nn.GroupNorm(min(8, c), c), nn.SiLU(),
                       nn.Conv2d(c, c, 3, padding=1), nn.GroupNorm(min(8, c), c), nn.SiLU()]
            c_in = c
        self.net = nn.Sequential(*layers)
        self.out_channels = c_in

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


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


class VisionEncoder(nn.Module):
    """One camera: backbone -> pooled grid -> linear projection + learned position embedding."""

    def __init__(self, cfg: PolicyConfig) -> None:
        super().__init__()
        if cfg.vision_backbone == "cnn":
            self.backbone: nn.Module = SmallCNN(cfg.vision_channels)
        elif cfg.vision_backbone == "torchvision":
            self.backbone = _torchvision_trunk(cfg.vision_arch, cfg.vision_weights)
        else:
            self.backbone = _HFTrunk(cfg.vision_weights)
        if cfg.freeze_vision:
            self.backbone.requires_grad_(False)
        with torch.no_grad():
            channels = self.backbone(torch.zeros(1, 3, *cfg.image_size)).shape[1]
        self.side = math.isqrt(cfg.vision_tokens)
        self.proj = nn.Linear(channels, cfg.d_model)
        self.pos = nn.Parameter(torch.randn(cfg.vision_tokens, cfg.d_model) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x float [N, 3, H, W] normalised -> tokens [N, T, d]."""
        f = F.adaptive_avg_pool2d(self.backbone(x), self.side)
        return self.proj(f.flatten(2).transpose(1, 2)) + self.pos


class ProprioEncoder(nn.Module):
    def __init__(self, state_dim: int, d: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(state_dim, d), nn.SiLU(), nn.Linear(d, d))

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return self.net(state)
