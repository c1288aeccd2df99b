"""Normalisation statistics: incremental equals from scratch; exact image histograms; normaliser."""

from pathlib import Path

import numpy as np
import pytest

from vla.data.normalize import Normalizer
from vla.data.stats import ByteHistogramStats, RunningStats
from vla.data.store import EpisodeStore
from vla.data.store_stats import CACHE_FILE
from vla.data.synthetic import default_schema, synthetic_episode

SCHEMA = default_schema(image_size=16)


def test_running_stats_match_numpy_over_batches() -> None:
    rng = np.random.default_rng(0)
    data = rng.normal(3.0, 2.0, size=(5000, 4)) * [1, 10, 0.1, 1]
    rs = RunningStats(4, reservoir=100_000)
    for block in np.array_split(data, 13):
        rs.update(block)
    s = rs.finish()
    np.testing.assert_allclose(s.mean, data.mean(0), rtol=1e-10)
    np.testing.assert_allclose(s.std, data.std(0), rtol=1e-10)
    np.testing.assert_array_equal(s.min, data.min(0))
    np.testing.assert_array_equal(s.max, data.max(0))
    np.testing.assert_allclose(s.q01, np.percentile(data, 1, axis=0))  # reservoir holds everything here


def test_reservoir_percentiles_are_close_when_sampling() -> None:
    data = np.random.default_rng(1).uniform(0, 1, size=(200_000, 1))
    rs = RunningStats(1, reservoir=20_000)
    for block in np.array_split(data, 50):
        rs.update(block)
    s = rs.finish()
    assert abs(s.q01[0] - 0.01) < 0.005 and abs(s.q99[0] - 0.99) < 0.005


def test_byte_histogram_is_exact() -> None:
    img = np.random.default_rng(2).integers(0, 256, size=(1000, 3), dtype=np.uint8)
    h = ByteHistogramStats(3)
    h.update(img[:400])
    h.update(img[400:])
    s = h.finish()
    np.testing.assert_allclose(s.mean, img.mean(0))
    np.testing.assert_allclose(s.std, img.std(0))
    np.testing.assert_array_equal(s.q99, np.percentile(img, 99, axis=0, method="lower"))
    np.testing.assert_array_equal(s.min, img.min(0))


def test_store_stats_incremental_equals_fresh(tmp_path: Path) -> None:
    store = EpisodeStore.create(tmp_path / "s.zarr", SCHEMA)
    for seed in range(4):
        store.append_episode(synthetic_episode(SCHEMA, seed))
    first = store.stats()
    assert (store.path / CACHE_FILE).exists()
    for seed in range(4, 9):
        store.append_episode(synthetic_episode(SCHEMA, seed))
    incremental = store.stats()
    fresh = store.stats(episodes=np.arange(9))
    assert incremental["action"].count == store.n_steps != first["action"].count
    for key in ("state", "action", "reward", "images/agentview"):
        np.testing.assert_allclose(incremental[key].mean, fresh[key].mean, rtol=1e-9, err_msg=key)
        np.testing.assert_allclose(incremental[key].std, fresh[key].std, rtol=1e-9, err_msg=key)
        np.testing.assert_array_equal(incremental[key].max, fresh[key].max)
    actions = store.read("action", 0, store.n_steps)
    np.testing.assert_allclose(incremental["action"].mean, actions.mean(0), rtol=1e-5)
    subset = store.stats(keys=["action"], episodes=store.select(task="reach"))
    assert subset["action"].count == sum(len(store.episode(i, ["action"])) for i in store.select(task="reach"))
    with pytest.raises(KeyError, match="did you mean 'state'"):
        store.stats(keys=["stat"])


def test_normalizer_round_trip(tmp_path: Path) -> None:
    store = EpisodeStore.create(tmp_path / "s.zarr", SCHEMA)
    for seed in range(3):
        store.append_episode(synthetic_episode(SCHEMA, seed))
    x = store.read("action", 0, store.n_steps)
    for mode in ("mean_std", "quantile"):
        norm = Normalizer(store.stats(keys=["action"]), mode=mode)
        y = norm.normalize("action", x)
        np.testing.assert_allclose(norm.unnormalize("action", y), x, atol=1e-5)
        if mode == "mean_std":
            np.testing.assert_allclose(y.mean(0), 0, atol=1e-4)
    with pytest.raises(ValueError, match="unknown normalisation mode"):
        Normalizer(store.stats(keys=["action"]), mode="minmax").normalize("action", x)


def test_near_constant_features_are_found_and_named() -> None:
    from vla.data.stats import describe_near_constant, near_constant

    rng = np.random.default_rng(0)
    rows = np.stack([rng.normal(0, 0.2, 500), np.full(500, 0.83), rng.normal(1, 0.004, 500),
                     rng.normal(0, 0.05, 500)], 1)
    acc = RunningStats(4)
    acc.update(rows)
    stats = acc.finish()
    assert near_constant(stats) == [1, 2]  # exactly constant, and a spread of 4 mm under the 1 cm floor
    assert near_constant(stats, floor=0.001) == [1]
    line = describe_near_constant("state", stats, exclude=frozenset({2}))
    assert line is not None and "dims 1 (= 0.83)" in line and "floored at 0.01" in line
    assert describe_near_constant("state", stats, floor=0.0) is None
