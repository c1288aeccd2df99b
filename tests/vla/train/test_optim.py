"""vla.train.optim: the optimiser's state through flat tensors, and how its update is computed."""

from __future__ import annotations

import torch
from torch import nn

from vla.train.optim import make_optimizer, optimizer_from_tensors, optimizer_to_tensors


def _stepped(model: nn.Module) -> torch.optim.AdamW:
    opt = make_optimizer(model, 1e-2, 1e-4, (0.9, 0.95))
    model(torch.ones(3, 4)).sum().backward()
    opt.step()
    return opt


def test_the_fused_kernel_survives_a_checkpoint_saved_without_it() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = _stepped(model)
    assert all(g["fused"] for g in opt.param_groups)
    tensors, groups = optimizer_to_tensors(opt)
    for g in groups:  # as written before the optimiser was fused
        g.pop("fused")
        g["foreach"] = None
    fresh = make_optimizer(model, 1e-2, 1e-4, (0.9, 0.95))
    optimizer_from_tensors(fresh, tensors, groups)
    assert all(g["fused"] for g in fresh.param_groups)
    assert torch.equal(fresh.state_dict()["state"][0]["exp_avg"], opt.state_dict()["state"][0]["exp_avg"])
