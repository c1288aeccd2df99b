"""Image augmentation for training: random shifts (DrQ, Kostrikov et al. arXiv 2004.13649; RAD,
Laskin et al. arXiv 2004.14990: pad by a few pixels with the border's values, crop back at a random
offset). diffusion_policy and robomimic train their camera policies with the same kind of random crop.

Ours shifts each training sample's frames by one offset for all its observation steps (a shift between
the frames of one sample would read as motion) and draws the offsets from the training step's
generator, so a resumed run augments as the uninterrupted one did.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def random_shift(frames: torch.Tensor, pad: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """frames [B, To, H, W, C] (uint8 or float, pixel units) -> float frames of the same shape, each
    sample's moved by a whole-pixel offset in [-pad, pad] per axis, the uncovered border filled with
    the edge's pixels. pad = 0 returns the frames as floats."""
    if frames.dim() != 5:
        raise ValueError(f"random_shift: frames have shape {tuple(frames.shape)}, expected (B, To, H, W, C)")
    if pad < 0:
        raise ValueError(f"random_shift: pad must be >= 0, got {pad}")
    x = frames.float()
    if pad == 0:
        return x
    b, to, h, w, c = x.shape
    x = x.permute(0, 1, 4, 2, 3).reshape(b, to * c, h, w)
    x = F.pad(x, (pad, pad, pad, pad), mode="replicate")
    gen_device = generator.device if generator is not None else x.device
    off = torch.randint(0, 2 * pad + 1, (b, 2), generator=generator, device=gen_device).to(x.device)
    rows = off[:, 0, None] + torch.arange(h, device=x.device)  # [B, H]
    cols = off[:, 1, None] + torch.arange(w, device=x.device)  # [B, W]
    x = x.gather(2, rows[:, None, :, None].expand(b, to * c, h, w + 2 * pad))
    x = x.gather(3, cols[:, None, None, :].expand(b, to * c, h, w))
    return x.reshape(b, to, c, h, w).permute(0, 1, 3, 4, 2)
