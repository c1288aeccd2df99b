"""A seeded, resumable batch sampler: the batch at global step s is a pure function of
(seed, s), so resuming at step s continues the exact data order of an uninterrupted run.

Epoch e uses the permutation `randperm(N, seed + e)`; a step takes the next `batch_size`
indices of it (the last partial batch of an epoch is dropped, as with drop_last=True). For DDP,
rank r of W takes the r-th slice of each global batch, so W processes together see the same data
as one process with the global batch.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch


class ResumableBatchSampler:
    def __init__(self, n: int, batch_size: int, seed: int = 0, start_step: int = 0, rank: int = 0,
                 world_size: int = 1, weights: torch.Tensor | None = None) -> None:
        """`weights` (one per sample): draw each batch with replacement in proportion to them,
        from a generator seeded by (seed, step), so resuming stays exact."""
        if n < batch_size:
            raise ValueError(f"dataset has {n} samples, fewer than one batch of {batch_size}")
        if batch_size % world_size:
            raise ValueError(f"batch_size {batch_size} is not divisible by world_size {world_size}")
        self.n, self.batch_size, self.seed, self.start_step = n, batch_size, seed, start_step
        self.rank, self.world_size = rank, world_size
        self.per_epoch = n // batch_size
        if weights is not None:
            weights = torch.as_tensor(weights, dtype=torch.float64)
            if weights.shape != (n,) or not torch.isfinite(weights).all() or (weights < 0).any() or weights.sum() <= 0:
                raise ValueError(f"weights must be {n} finite values >= 0 with a positive sum")
        self.weights = weights
        self._perm_epoch, self._perm = -1, torch.empty(0, dtype=torch.long)

    def batch_at(self, step: int) -> list[int]:
        if self.weights is not None:
            gen = torch.Generator().manual_seed((self.seed * 1_000_003 + step * 7_919) % (2**63 - 1))
            batch = torch.multinomial(self.weights, self.batch_size, replacement=True, generator=gen)
            local = self.batch_size // self.world_size
            return batch[self.rank * local : (self.rank + 1) * local].tolist()
        epoch, i = divmod(step, self.per_epoch)
        if epoch != self._perm_epoch:
            self._perm = torch.randperm(self.n, generator=torch.Generator().manual_seed(self.seed + epoch))
            self._perm_epoch = epoch
        batch = self._perm[i * self.batch_size : (i + 1) * self.batch_size]
        local = self.batch_size // self.world_size
        return batch[self.rank * local : (self.rank + 1) * local].tolist()

    def __iter__(self) -> Iterator[list[int]]:
        step = self.start_step
        while True:
            yield self.batch_at(step)
            step += 1
