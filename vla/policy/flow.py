"""Flow-matching math as pure functions (work on torch tensors; the Euler and guidance helpers
also on numpy arrays, so the ONNX runtime shares them).

Convention (pi0, Black et al. arXiv 2410.24164; conditional flow matching, Lipman et al. arXiv
2210.02747; rectified flow, Liu et al. arXiv 2209.03003): flow time tau in [0, 1] with tau = 1 the
clean chunk and tau = 0 pure noise,

    x_tau = tau * x1 + (1 - tau) * x0,   x0 ~ N(0, I),   target velocity u = x1 - x0,

integrated from tau = 0 to 1 in K Euler steps. The clean-chunk estimate at (x_tau, tau) under a
predicted velocity v is x1_hat = x_tau + (1 - tau) * v.

Training-time real-time chunking (Black et al. 2025, arXiv 2512.05964; also Xiaomi-Robotics-0):
the first d actions of a chunk get tau = 1 (they are given clean) and are excluded from the loss;
d is drawn per sample. Ours differs in the draw: with probability `prefix_prob` d is uniform in
1..d_max, otherwise 0 (the paper draws the simulated delay from a fixed distribution and always
conditions), so that the model stays good at unconditioned chunks, which a fresh episode needs.

Guidance (inference-time RTC, Black et al. arXiv 2506.07339, after PiGDM, Song et al. 2023): a
hook returns a desired change `delta` of the clean estimate; the velocity becomes

    v' = v + w(tau) * J^T delta,   w(tau) = min(beta, (1 - tau) / (tau * r^2)),
    r^2 = (1 - tau)^2 / (tau^2 + (1 - tau)^2),

where J = d x1_hat / d x_tau. RTC gets J^T delta by a vector-Jacobian product through the model;
our default takes J = I (exact when v does not depend on x_tau, and free: the hook is applied
in the ONNX runtime as well), and the torch policy can do the VJP (`guidance_vjp=True`). The
weight is clipped at beta (`guidance_max_weight`), as in RTC, because it diverges at tau -> 0.
"""

from __future__ import annotations

from typing import TypeVar

import torch

Array = TypeVar("Array")  # torch.Tensor or numpy.ndarray: only arithmetic is used on it


def sample_tau(batch: int, alpha: float, tau_max: float, generator: torch.Generator | None = None,
               device: torch.device | str = "cpu") -> torch.Tensor:
    """tau = tau_max * (1 - u), u ~ Beta(alpha, 1): pi0's schedule that favours noisy (low) tau.

    u = U^(1/alpha) for U uniform is exactly Beta(alpha, 1), and takes our generator (seeded,
    resumable) where torch.distributions would not.
    """
    uniform = torch.rand(batch, generator=generator, device=device)
    return tau_max * (1.0 - uniform.pow(1.0 / alpha))


def sample_prefix_len(batch: int, max_prefix: int, prob: float, generator: torch.Generator | None = None,
                      device: torch.device | str = "cpu") -> torch.Tensor:
    """d per sample: 0 with probability 1 - prob, else uniform in 1..max_prefix."""
    if max_prefix == 0:
        return torch.zeros(batch, dtype=torch.long, device=device)
    use = torch.rand(batch, generator=generator, device=device) < prob
    d = torch.randint(1, max_prefix + 1, (batch,), generator=generator, device=device)
    return torch.where(use, d, torch.zeros_like(d))


def prefix_mask(prefix_len: torch.Tensor, horizon: int) -> torch.Tensor:
    """bool[B, H]: True at the positions that are given clean."""
    return torch.arange(horizon, device=prefix_len.device)[None, :] < prefix_len[:, None]


def interpolate(x0: torch.Tensor, x1: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """x_tau for per-position times tau [B, H] (broadcast over the action dimension)."""
    t = tau[..., None]
    return t * x1 + (1.0 - t) * x0


def target_velocity(x0: torch.Tensor, x1: torch.Tensor) -> torch.Tensor:
    return x1 - x0


def clip_targets(x1: torch.Tensor, bound: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Normalised action targets clipped to [-bound, bound] (bound <= 0: unchanged), and the mask
    of the entries it changed.

    Ours, not the flow-matching papers': a dimension the demonstrations barely use gets a tiny
    normalisation scale (quantile mode maps its [q01, q99] to [-1, 1]), so a later action outside
    that envelope lands tens of units out and its square can dominate the loss. The main job's
    camera policy is such a case: the person's corrections tilt the wrist by up to 49 normalised
    units where no demo exceeds 1.6. Measured there (main_job_notes.md), clipping at 2 leaves the
    corrections' loss at 0.72 of 0.79 (they differ from the policy in every dimension, the gripper
    most) and does not change what a round of them does to success; it bounds the pull of a few
    outliers, nothing more.
    """
    if bound <= 0:
        return x1, torch.zeros_like(x1, dtype=torch.bool)
    clipped = x1.clamp(-bound, bound)
    return clipped, clipped != x1


def clean_estimate(x: Array, v: Array, tau: float) -> Array:
    return x + (1.0 - tau) * v  # type: ignore[operator,return-value]


def guidance_weight(tau: float, max_weight: float) -> float:
    """RTC's pseudo-inverse guidance weight, clipped at `max_weight`."""
    if tau <= 0.0 or tau >= 1.0:
        return max_weight
    r2 = (1.0 - tau) ** 2 / (tau**2 + (1.0 - tau) ** 2)
    return min(max_weight, (1.0 - tau) / (tau * r2))


def euler_times(num_steps: int) -> list[float]:
    """The K flow times at which the velocity is evaluated: 0, 1/K, ..., (K-1)/K."""
    if num_steps < 1:
        raise ValueError(f"num_steps must be >= 1, got {num_steps}")
    return [k / num_steps for k in range(num_steps)]


def masked_mse(pred: torch.Tensor, target: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Mean squared error over positions with weight [B, H] (0 = excluded), averaged over A."""
    per_pos = (pred - target).pow(2).mean(dim=-1)
    return (per_pos * weight).sum() / weight.sum().clamp_min(1.0)
