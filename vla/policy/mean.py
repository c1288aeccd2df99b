"""A policy ensemble across trainings: the mean of the chunks that several independently trained policies
give for the same observation (deep ensembles, Lakshminarayanan et al., arXiv 1612.01474: members that differ
only in their random seed, their outputs averaged).

Why here: the camera-only recipe's trainings differ far more than their evaluations' noise (the same recipe,
training seeds 0 and 1, keeps 0.62 and 0.85 of its clean success under the `realistic` preset), so one training
is a draw; the mean of two is the usual answer to a seed's idiosyncratic errors. Where ours differs: a deep
ensemble averages predictive distributions; a flow policy run at noise scale 0 gives one chunk per member, so
this averages those chunks, which is only sound where the members agree on the mode (two members that pass a
turned cube on opposite sides would average into neither). Spec: `mean:ckpt=A+B[+C...]`, each member any
policy spec without a comma (a checkpoint or an ONNX export folder); every member must act on the same
observations and return chunks of one shape.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vla.policy.specs import spec_args, spec_loader
from vla.registry import POLICY_SPECS

# what the members must share, or their chunks do not mean the same thing
SHARED = ("cameras", "state_dim", "action_dim", "chunk_size")


class MeanPolicy:
    """A Policy (`sample_chunk`, `reset`) whose chunk is the mean of its members' chunks."""

    def __init__(self, members: Sequence[Any], names: Sequence[str] | None = None) -> None:
        if len(members) < 2:
            raise ValueError(f"mean: an ensemble needs at least 2 members, got {len(members)}")
        names = list(names) if names is not None else [f"member {i}" for i in range(len(members))]
        first = getattr(members[0], "cfg", None)
        for name, m in zip(names[1:], members[1:], strict=True):
            cfg = getattr(m, "cfg", None)
            for key in SHARED:
                a, b = getattr(first, key, None), getattr(cfg, key, None)
                if a != b:
                    raise ValueError(f"mean: {name} has {key}={b!r}, {names[0]} has {a!r}: members must act on "
                                     "the same observations and give chunks of one shape")
        self.members = list(members)
        self.cfg = first

    def reset(self, seed: int | None = None) -> None:
        for m in self.members:
            m.reset(seed)

    def sample_chunk(self, obs_batch: Sequence[Any], prefix: np.ndarray | None = None, guidance: Any = None
                     ) -> np.ndarray:
        chunks = [np.asarray(m.sample_chunk(obs_batch, prefix=prefix), np.float32) for m in self.members]
        shapes = {c.shape for c in chunks}
        if len(shapes) != 1:
            raise ValueError(f"mean: the members gave chunks of shapes {sorted(shapes)}")
        return np.mean(chunks, axis=0)


def parse_members(args: str) -> list[str]:
    a = spec_args("mean", args, ("ckpt",), ("ckpt",), "mean:ckpt=A+B")
    members = [m.strip() for m in a["ckpt"].split("+")]
    if len(members) < 2 or not all(members):
        raise ValueError(f"mean: ckpt must name at least 2 policies joined by '+', got {a['ckpt']!r}")
    return members


@POLICY_SPECS.register("mean")
def make_mean(args: str, env: Any = None, seed: int = 0, load: Callable[[str], Any] | None = None) -> MeanPolicy:
    members = parse_members(args)
    load = spec_loader(load, seed)
    return MeanPolicy([load(m) for m in members], names=members)
