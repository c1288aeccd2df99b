from itertools import pairwise

import pytest

from vla import protocol
from vla.config import ConfigError, load_config
from vla.protocol import COLLECT, REPORT, TUNE, range_of, range_of_seeds, seed_range, seeds
from vla.refine.config import RefineConfig


def test_the_ranges_are_disjoint_and_cover_one_block_each() -> None:
    ranges = sorted(protocol.RANGES.values(), key=lambda r: r.start)
    assert [r.name for r in ranges] == ["collect", "tune", "report"]
    for a, b in pairwise(ranges):
        assert a.stop <= b.start  # disjoint
    assert COLLECT.start == 0  # the demos' and rollouts' seeds of every earlier run keep their episodes


def test_seeds_are_offsets_inside_a_range_and_never_leave_it() -> None:
    assert seeds("report", 3) == [REPORT.start, REPORT.start + 1, REPORT.start + 2]
    assert seeds("tune", 2, offset=10) == [TUNE.start + 10, TUNE.start + 11]
    assert seeds("collect", 2, 200_000) == [200_000, 200_001]
    with pytest.raises(ValueError, match="'tune' holds offsets"):
        seeds("tune", 5, offset=TUNE.size - 2)
    with pytest.raises(ValueError, match="did you mean 'report'"):
        seed_range("reprot")


def test_a_seed_list_names_its_range() -> None:
    assert range_of(5) == "collect" and range_of(1000) == "collect"  # the old "held-out" seeds
    assert range_of(TUNE.start) == "tune" and range_of(REPORT.stop - 1) == "report"
    assert range_of(-1) == protocol.OUTSIDE and range_of(REPORT.stop) == protocol.OUTSIDE
    assert range_of_seeds(seeds("report", 50)) == "report"
    assert range_of_seeds([1000, REPORT.start]) == protocol.MIXED
    with pytest.raises(ValueError, match="empty"):
        range_of_seeds([])


def test_check_in_range_names_the_seed_and_where_it_lies() -> None:
    protocol.check_in_range("report", seeds("report", 4))
    with pytest.raises(ValueError, match=r"seed 1000 is not in the 'report' range.*lies in 'collect'"):
        protocol.check_in_range("report", [REPORT.start, 1000])


def test_refine_evaluates_on_a_named_range_and_collects_on_collect() -> None:
    cfg = load_config(RefineConfig, "refine", "default", ["eval_seed_range=report", "eval_episodes=3",
                                                         "episodes_per_iteration=4", "collect_seed_offset=300000",
                                                         "ckpt=c", "demos=d"])
    assert cfg.eval_seeds() == seeds("report", 3)
    assert cfg.collect_seeds(0) == [300_000, 300_001, 300_002, 300_003]
    assert cfg.collect_seeds(2) == [300_008, 300_009, 300_010, 300_011]
    assert all(range_of(s) == "collect" for s in cfg.collect_seeds(5))


def test_a_retired_seed_key_says_what_replaced_it() -> None:
    with pytest.raises(ConfigError, match=r"'eval_seed_start' is gone: .*eval_seed_range"):
        load_config(RefineConfig, "refine", "default", ["eval_seed_start=1000", "ckpt=c", "demos=d"])
