"""Transformer building blocks (pre-LayerNorm, Xiong et al. arXiv 2002.04745) on
`F.scaled_dot_product_attention`, written out rather than nn.TransformerEncoder so that the same
modules trace cleanly into ONNX and masks are explicit booleans (True = may attend).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, d: int, heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.q = nn.Linear(d, d)
        self.kv = nn.Linear(d, 2 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x: torch.Tensor, context: torch.Tensor, key_mask: torch.Tensor | None) -> torch.Tensor:
        """x [B, N, d] attends to context [B, L, d]; key_mask bool [B, L] (True = valid)."""
        b, n, d = x.shape
        h = self.heads
        q = self.q(x).view(b, n, h, d // h).transpose(1, 2)
        k, v = self.kv(context).view(b, -1, 2, h, d // h).permute(2, 0, 3, 1, 4)
        mask = None if key_mask is None else key_mask[:, None, None, :]
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                           dropout_p=self.dropout if self.training else 0.0)
        return self.out(a.transpose(1, 2).reshape(b, n, d))


class Block(nn.Module):
    """Self-attention, optional cross-attention to a context, MLP; each with a residual."""

    def __init__(self, d: int, heads: int, mlp_ratio: float, dropout: float, cross: bool) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = Attention(d, heads, dropout)
        self.ln_x = nn.LayerNorm(d) if cross else None
        self.cross = Attention(d, heads, dropout) if cross else None
        self.ln2 = nn.LayerNorm(d)
        hidden = int(d * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, d))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, context: torch.Tensor | None = None,
                context_mask: torch.Tensor | None = None) -> torch.Tensor:
        y = self.ln1(x)
        x = x + self.attn(y, y, mask)
        if self.cross is not None and self.ln_x is not None:
            assert context is not None
            x = x + self.cross(self.ln_x(x), context, context_mask)
        return x + self.mlp(self.ln2(x))


def sinusoidal(t: torch.Tensor, dim: int, max_period: float = 10_000.0) -> torch.Tensor:
    """Sinusoidal embedding of continuous times t [...] -> [..., dim] (DDPM/Transformer style)."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    # Scale tau in [0, 1] up so that the low frequencies still separate nearby flow times.
    args = (t.float() * 1000.0)[..., None] * freqs
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
