"""Exponential moving average of the weights (Polyak averaging), with the usual warm-up of the
decay, min(decay, (1 + n) / (10 + n)), so early averages are not dominated by the initialisation.
Buffers (normalisation statistics) are copied, not averaged.

`warmup=False` averages at the full decay from the first update: for fine-tuning from weights that
are already an average (a checkpoint's EMA), whose start is the best estimate there is, not an
initialisation to forget. With the warm-up, the fine-tuned average forgets the start within ~10
updates and ends as a short average of the new, noisier iterates.
"""

from __future__ import annotations

import torch
from torch import nn


class EMA:
    def __init__(self, model: nn.Module, decay: float, warmup: bool = True) -> None:
        self.decay, self.warmup = decay, warmup
        self.updates = 0
        self.state = {k: v.detach().clone().float() if v.is_floating_point() else v.detach().clone()
                      for k, v in model.state_dict().items()}
        params = {name for name, _ in model.named_parameters()}
        # floating-point parameters are averaged, everything else (buffers, integer counters) copied
        self._averaged = [k for k, v in model.state_dict().items() if k in params and v.is_floating_point()]
        self._copied = sorted(self.state.keys() - set(self._averaged))

    def current_decay(self) -> float:
        """The decay of the update just counted in `updates` (warmed up unless `warmup=False`)."""
        return min(self.decay, (1 + self.updates) / (10 + self.updates)) if self.warmup else self.decay

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        self.updates += 1
        d = self.current_decay()
        current = model.state_dict()
        # one multi-tensor call instead of ~200 small ones; the same arithmetic, tensor by tensor
        ema = [self.state[k] for k in self._averaged]
        torch._foreach_mul_(ema, d)
        torch._foreach_add_(ema, [current[k].detach().float() for k in self._averaged], alpha=1 - d)
        for k in self._copied:
            self.state[k].copy_(current[k])

    def state_for(self, model: nn.Module) -> dict[str, torch.Tensor]:
        """EMA tensors in the model's dtypes, ready for load_state_dict / saving."""
        ref = model.state_dict()
        return {k: v.to(ref[k].dtype) for k, v in self.state.items()}
