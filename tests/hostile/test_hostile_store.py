"""Property-based hostile inputs for the EpisodeStore: damaged stores and malformed
episodes end in one clear error naming the key / file, never a traceback or silent wrong data."""

import random
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.hostile.cases import (
    STORE_DAMAGE,
    build_store,
    damage_store,
    fresh_copy,
    judge,
    malformed_episode,
    read_all,
    swap_chunks,
    verify_store,
)
from vla.data.store import EpisodeStore

OK = ("clear", "harmless")


@pytest.fixture(scope="module")
def template() -> Iterator[tuple[Path, dict]]:
    with tempfile.TemporaryDirectory(prefix="hostile_store_") as tmp:
        path = build_store(Path(tmp) / "template.zarr")
        yield path, read_all(path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(STORE_DAMAGE), seed=st.integers(0, 2**32 - 1))
def test_damaged_store_is_a_clear_error_or_unchanged(template: tuple[Path, dict], kind: str, seed: int) -> None:
    src, reference = template
    with tempfile.TemporaryDirectory(prefix="case_") as tmp:
        path = fresh_copy(src, Path(tmp) / "s.zarr")
        case, needles = damage_store(path, kind, random.Random(seed))
        verdict = judge(case, lambda: read_all(path), reference, needles)
    assert verdict.kind in OK, verdict
    # Damage under data/ must be an error, except to the metadata of the plain groups data/ and
    # data/images/, which nothing reads (the arrays are opened by path): "harmless" is right there.
    group_meta = re.match(r"(truncate|delete|garbage) data(/images)?/zarr\.json", case) is not None
    assert verdict.kind == "clear" or group_meta or not case.startswith(
        ("truncate data", "delete data", "garbage data")), verdict


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
@example(seed=0).via("a swap of two chunk files of one array")
@example(seed=1).via("a swap across two arrays of one layout")
def test_swapped_chunk_files_are_named_by_verify_and_by_every_read(template: tuple[Path, dict], seed: int) -> None:
    """Two chunk files swapped (of one array, or of two arrays of one layout) each pass their own
    checksum; `vla data verify` and the reads must both name the key and a chunk file, never read them."""
    src, reference = template
    with tempfile.TemporaryDirectory(prefix="case_") as tmp:
        path = fresh_copy(src, Path(tmp) / "s.zarr")
        case, needles = swap_chunks(path, random.Random(seed))
        assert needles, case  # the template's arrays have chunk files that differ
        verified = judge(f"{case} (verify)", lambda: verify_store(path), None, needles)
        read = judge(case, lambda: read_all(path), reference, needles)
    assert verified.kind == "clear", verified
    assert read.kind == "clear", read


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_malformed_episode_is_rejected_and_store_unchanged(template: tuple[Path, dict], seed: int) -> None:
    src, _ = template
    with tempfile.TemporaryDirectory(prefix="case_") as tmp:
        path = fresh_copy(src, Path(tmp) / "s.zarr")
        case, episode, needles = malformed_episode(random.Random(seed))
        with EpisodeStore.open(path, mode="a") as store:
            verdict = judge(case, lambda: store.append_episode(episode), None, needles)
        reopened = EpisodeStore.open(path)
        assert reopened.n_episodes == 4 and reopened.table() is not None, case  # nothing was committed
    assert verdict.kind == "clear", verdict


def test_the_generators_give_many_distinct_cases(template: tuple[Path, dict]) -> None:
    """The property tests draw from generators that give at least 50 distinct cases for as many draws as they
    make: checked on a fixed draw here, not by counting what the property tests saw (under pytest-xdist they
    may run in another worker, and a count of nothing could only skip)."""
    src, _ = template
    cases = set()
    with tempfile.TemporaryDirectory(prefix="cases_") as tmp:
        for i in range(60):
            path = fresh_copy(src, Path(tmp) / f"s{i}.zarr")
            cases.add(damage_store(path, STORE_DAMAGE[i % len(STORE_DAMAGE)], random.Random(i))[0])
    cases |= {f"episode {malformed_episode(random.Random(i))[0]}" for i in range(40)}
    assert len(cases) >= 50, sorted(cases)
