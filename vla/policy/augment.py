"""Image augmentation for training: random shifts (DrQ, Kostrikov et al. arXiv 2004.13649; RAD,
Laskin et al. arXiv 2004.14990: pad by a few pixels with the border's values, crop back at a random
offset). diffusion_policy and robomimic train their camera policies with the same kind of random crop.
And photometric augmentation (the colour jitter and noise of RAD's and robomimic's augmentation sets)
in the units and under the names of the perturbation suite (vla.perturb: `lighting`, `colour`,
`pixel_noise`), so a policy trained on `lighting:0.2` has seen every brightness the evaluator's
`lighting:0.2` draws.

Ours shifts each training sample's frames by one offset for all its observation steps (a shift between
the frames of one sample would read as motion), gives them one brightness and white balance (a camera's
exposure holds over a few frames) and draws everything from the training step's generator, so a resumed
run augments as the uninterrupted one did.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

# the perturbation suite's image kinds that training draws (blur is left out: it costs a convolution per frame)
PHOTOMETRIC = ("lighting", "colour", "pixel_noise")


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


def parse_photometric(text: str) -> dict[str, float]:
    """`augment_photometric` (`lighting:0.2,colour:0.05,pixel_noise:3`; "" = off) -> {kind: severity}, or one
    line naming the entry that is not a photometric kind of vla.perturb or has no valid severity."""
    from vla.data.schema import closest
    from vla.perturb import KINDS, parse_perturb

    for raw in str(text).split(","):
        name = raw.partition(":")[0].strip()
        if name and name not in PHOTOMETRIC:
            if name in KINDS:
                raise ValueError(f"augment_photometric: '{name}' is not drawn in training (it takes "
                                 f"{', '.join(PHOTOMETRIC)})")
            raise ValueError(f"augment_photometric: '{name}' is not a perturbation kind" + closest(name, PHOTOMETRIC))
    try:
        return parse_perturb(text, presets={})
    except ValueError as e:
        raise ValueError(f"augment_photometric: {str(e).removeprefix('perturb: ')}") from None


def photometric(frames: torch.Tensor, kinds: dict[str, float], generator: torch.Generator | None = None
                ) -> torch.Tensor:
    """frames [B, To, H, W, C] (pixel units) -> float frames of the same shape in [0, 255]: each sample's frames
    times a brightness gain from [1 - lighting, 1 + lighting] and per-channel gains from [1 - colour,
    1 + colour] (vla.perturb's per-episode draws), plus Gaussian noise whose standard deviation is drawn from
    [0, pixel_noise] levels per sample, so clean frames stay in the mix."""
    if frames.dim() != 5:
        raise ValueError(f"photometric: frames have shape {tuple(frames.shape)}, expected (B, To, H, W, C)")
    x = frames.float()
    if not kinds:
        return x
    b, c = x.shape[0], x.shape[-1]
    gen_device = generator.device if generator is not None else x.device

    def uniform(*shape: int) -> torch.Tensor:
        return torch.rand(shape, generator=generator, device=gen_device).to(x.device)

    light, colour, noise = (float(kinds.get(k, 0.0)) for k in PHOTOMETRIC)
    gain = torch.ones(b, 1, 1, 1, c, device=x.device)
    if light > 0:
        gain = gain * (1.0 + light * (2.0 * uniform(b, 1, 1, 1, 1) - 1.0))
    if colour > 0:
        gain = gain * (1.0 + colour * (2.0 * uniform(b, 1, 1, 1, c) - 1.0))
    x = x * gain  # a new tensor: the caller's frames stay as they were, and what follows works in place on it
    if noise > 0:
        std = noise * uniform(b, 1, 1, 1, 1)
        x.add_(torch.randn(x.shape, generator=generator, device=gen_device).to(x.device).mul_(std))
    return x.clamp_(0.0, 255.0)
