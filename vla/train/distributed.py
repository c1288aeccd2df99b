"""Data-parallel training across processes (torchrun; gloo on CPU, nccl on CUDA).

Why not DistributedDataParallel: DDP hooks into `forward`, and the model deliberately has no
forward (`compute_loss` is the training entry point). The same result is two collective calls:
parameters are broadcast from rank 0 once, and after each backward the gradients are averaged
with all_reduce (DDP does this in buckets overlapped with backward, which matters on GPUs at
scale, not at our sizes). Each rank takes its slice of every global batch (the sampler), and its
own noise stream (seed + rank), so W ranks together train on the global batch.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch import nn


def env_world() -> tuple[int, int, int]:
    """(rank, world_size, local_rank) from torchrun's environment; (0, 1, 0) without it."""
    return (int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)),
            int(os.environ.get("LOCAL_RANK", 0)))


def init_distributed(device: torch.device, init_method: str | None = None, rank: int | None = None,
                     world_size: int | None = None) -> tuple[int, int]:
    """Join the process group (no-op for a single process); returns (rank, world_size)."""
    env_rank, env_size, _ = env_world()
    rank = env_rank if rank is None else rank
    world_size = env_size if world_size is None else world_size
    if world_size > 1 and not dist.is_initialized():
        backend = "nccl" if device.type == "cuda" else "gloo"
        dist.init_process_group(backend, init_method=init_method or "env://", rank=rank, world_size=world_size)
    return rank, world_size


def broadcast_parameters(model: nn.Module) -> None:
    for t in model.state_dict().values():
        dist.broadcast(t, src=0)


def average_gradients(model: nn.Module, world_size: int) -> None:
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if not grads:
        return
    flat = torch.cat([g.reshape(-1) for g in grads])  # one collective instead of one per tensor
    dist.all_reduce(flat)
    flat /= world_size
    offset = 0
    for g in grads:
        g.copy_(flat[offset : offset + g.numel()].view_as(g))
        offset += g.numel()


def mean_across_ranks(value: float, device: torch.device) -> float:
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return float(t) / dist.get_world_size()
