"""AdamW with linear warm-up + cosine decay (Loshchilov & Hutter, arXiv 1711.05101 and
1608.03983), and the optimizer state as flat tensors for safetensors (no pickle): tensors go to
`optimizer.safetensors` as `state.<param index>.<name>`, the rest (param_groups) to JSON.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

IMPLEMENTATION = ("fused", "foreach", "capturable", "differentiable")  # param_group keys that are not state


def make_optimizer(model: nn.Module, lr: float, weight_decay: float, betas: tuple[float, float]
                   ) -> torch.optim.AdamW:
    # No decay on biases, norms and embeddings-like 1-D parameters (common practice since BERT).
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    for _, p in model.named_parameters():
        if p.requires_grad:
            (decay if p.dim() >= 2 else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    # The fused kernel (CPU and CUDA) instead of torch's default on CPU, a Python loop over ~100 small
    # tensors: with the multi-tensor EMA, the tiny policy's step alone 14-30% faster on 2 cores, the
    # job's pretraining 2% (benchmarks/bench_train_step.py, main_job_notes.md)
    return torch.optim.AdamW(groups, lr=lr, betas=betas, fused=True)


def lr_at(step: int, base: float, warmup: int, total: int, min_ratio: float) -> float:
    """Learning rate for the update made at `step` (0-based)."""
    if warmup > 0 and step < warmup:
        return base * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return base * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def optimizer_to_tensors(opt: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], list[dict[str, Any]]]:
    sd = opt.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    for idx, state in sd["state"].items():
        for name, value in state.items():
            tensors[f"state.{idx}.{name}"] = value if torch.is_tensor(value) else torch.tensor(value)
    groups = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items()} for g in sd["param_groups"]]
    return tensors, groups


def optimizer_from_tensors(opt: torch.optim.Optimizer, tensors: dict[str, torch.Tensor],
                           groups: list[dict[str, Any]]) -> None:
    state: dict[int, dict[str, torch.Tensor]] = {}
    for key, value in tensors.items():
        _, idx, name = key.split(".", 2)
        state.setdefault(int(idx), {})[name] = value
    own = opt.state_dict()["param_groups"]
    if [len(g["params"]) for g in own] != [len(g["params"]) for g in groups]:
        raise ValueError("optimizer state does not fit the model (parameter groups differ)")
    fixed = [{k: (tuple(v) if k == "betas" else v) for k, v in g.items()} for g in groups]
    # How the update is computed is this optimiser's, not the checkpoint's (one saved before the fused
    # kernel resumes with it too)
    for g, mine in zip(fixed, own, strict=True):
        for k in IMPLEMENTATION:
            if k in mine:
                g[k] = mine[k]
    opt.load_state_dict({"state": state, "param_groups": fixed})
