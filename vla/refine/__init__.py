"""Online refinement: HABC, RaC, HG-DAgger, DAgger and the SFT / filtered-BC / AWR baselines.
Every method name is registered in `vla.registry.ALGORITHMS` -> a `RefineRun` factory."""

from __future__ import annotations

from typing import Any

from vla.registry import ALGORITHMS

# Kept here (not in weights.py) so that registering the CLI command imports nothing heavy.
METHODS = ("habc", "rac", "hg_dagger", "dagger", "sft", "filtered_bc", "awr")


def _factory(method: str) -> Any:
    def make(**overrides: Any) -> Any:
        from vla.refine.config import RefineConfig
        from vla.refine.loop import RefineRun

        return RefineRun(RefineConfig(method=method, **overrides))

    return make


for _name in METHODS:
    ALGORITHMS.register(_name)(_factory(_name))
