"""The evaluation protocol: three disjoint, named seed ranges that every part of the stack uses by name.

- `collect`: demos, rollouts that become training data, frames for the perception and world models;
- `tune`: every choice (rates, scales, steps, variants, checkpoints, recipes) is made on these;
- `report`: the figures; nothing is chosen on them.

A figure measured on seeds that informed a choice is not a held-out figure, and before this module the
stack could not tell one from the other: the main job's preset was tuned over many rounds on the very
seeds (1000-1199) its README called held out. The evaluator, the refinement loop, the main job and the
benchmarks now name a range and an offset inside it, and every evaluation summary records the range its
seeds came from (`range_of_seeds`), so a results file says by itself whether its figure is held out.

`collect` starts at 0 so that the seeds demos and rollouts always used (0.., 200000.., 500000..) keep
giving the same episodes. Every seed the project evaluated on before the ranges existed is below
1,000,000, inside `collect`: no seed of `tune` or `report` was ever used to choose anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class SeedRange:
    name: str
    start: int  # first seed
    stop: int  # one past the last
    purpose: str

    def __contains__(self, seed: object) -> bool:
        return isinstance(seed, int) and self.start <= seed < self.stop

    @property
    def size(self) -> int:
        return self.stop - self.start

    def seeds(self, n: int, offset: int = 0) -> list[int]:
        """`n` consecutive seeds from `offset` inside the range; a list that would leave it is an error."""
        if n < 0 or offset < 0 or offset + n > self.size:
            raise ValueError(f"seed range '{self.name}' holds offsets 0..{self.size - 1}; "
                             f"{n} seeds from offset {offset} do not fit")
        return list(range(self.start + offset, self.start + offset + n))


COLLECT = SeedRange("collect", 0, 1_000_000, "demos, rollouts for training data, perception and world-model frames")
TUNE = SeedRange("tune", 1_000_000, 2_000_000, "every choice: rates, scales, steps, variants, checkpoints")
REPORT = SeedRange("report", 2_000_000, 3_000_000, "the reported figures; nothing is chosen on them")
RANGES: dict[str, SeedRange] = {r.name: r for r in (COLLECT, TUNE, REPORT)}
NAMES = tuple(RANGES)
OUTSIDE = "outside"  # a seed in none of the ranges (negative: imagined episodes; >= 3,000,000)
MIXED = "mixed"  # a seed list that spans more than one range


def seed_range(name: str) -> SeedRange:
    """The range called `name`; an unknown name is an error that lists the valid ones."""
    if name not in RANGES:
        import difflib

        match = difflib.get_close_matches(str(name), NAMES, n=1, cutoff=0.5)
        hint = f" (did you mean '{match[0]}'?)" if match else ""
        raise ValueError(f"unknown seed range '{name}'{hint}; valid: {', '.join(NAMES)}")
    return RANGES[name]


def seeds(name: str, n: int, offset: int = 0) -> list[int]:
    """`n` seeds of the named range from `offset` (e.g. `seeds("report", 200)`)."""
    return seed_range(name).seeds(n, offset)


def range_of(seed: int) -> str:
    """The name of the range `seed` lies in, or `OUTSIDE`."""
    for r in RANGES.values():
        if seed in r:
            return r.name
    return OUTSIDE


def range_of_seeds(seed_list: Iterable[int]) -> str:
    """The one range every seed lies in, `MIXED` when they span several, `OUTSIDE` when none is in a range."""
    names = {range_of(int(s)) for s in seed_list}
    if not names:
        raise ValueError("an empty seed list lies in no range")
    return names.pop() if len(names) == 1 else MIXED


def check_in_range(name: str, seed_list: Iterable[int], what: str = "seeds") -> None:
    """Every seed of `seed_list` in the named range, or one line saying which is not and where it lies."""
    r = seed_range(name)
    for s in seed_list:
        if int(s) not in r:
            raise ValueError(f"{what}: seed {s} is not in the '{name}' range ({r.start}..{r.stop - 1}); "
                             f"it lies in '{range_of(int(s))}'")


__all__ = [
    "COLLECT",
    "MIXED",
    "NAMES",
    "OUTSIDE",
    "RANGES",
    "REPORT",
    "TUNE",
    "SeedRange",
    "check_in_range",
    "range_of",
    "range_of_seeds",
    "seed_range",
    "seeds",
]
