from pathlib import Path

import numpy as np
import pytest

from worldmodel.config import WMTrainConfig, WorldModelConfig
from worldmodel.data import (
    EpisodeData,
    WorldModelDataError,
    load_episodes,
    make_batch,
    split_episodes,
    step_weights,
    window_indices,
)


def toy(lengths: list[int], success: list[bool]) -> EpisodeData:
    n = sum(lengths)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    reward = np.zeros(n, np.float32)
    for s, length, ok in zip(starts, lengths, success, strict=True):
        if ok:
            reward[s + length - 1] = 1.0  # the last action reaches success (and ends the episode)
    return EpisodeData(state=np.arange(n, dtype=np.float32)[:, None].repeat(2, 1),
                       action=np.arange(n, dtype=np.float32)[:, None].repeat(3, 1), reward=reward, images=None,
                       starts=starts, lengths=np.asarray(lengths, np.int64), success=np.asarray(success),
                       takeover=np.zeros(len(lengths), bool), task="t", instructions=["x"] * len(lengths))


def test_windows_mask_past_the_end_and_repeat_the_last_action() -> None:
    data = toy([10], [True])
    ix = window_indices(data, np.array([0]), np.array([3]), chunk=4, horizon=2)
    assert ix["obs"].tolist() == [[3, 7, 9]] and ix["obs_valid"].tolist() == [[True, True, False]]
    assert ix["act"][0, 1].tolist() == [7, 8, 9, 9] and ix["act_valid"][0, 1].tolist() == [True, True, True, False]


def test_batch_labels_success_in_the_chunk_that_holds_the_last_step_and_discounted_values() -> None:
    cfg = WorldModelConfig(chunk=4, horizon=2, gamma=0.5, state_dim=2, action_dim=3)
    data = toy([10, 6], [True, False])
    b = make_batch(data, np.array([0, 1]), np.array([1, 0]), cfg)
    # episode 0 from t=1: chunks cover steps 1-4 and 5-8; success is at step 9 -> in neither
    assert b["success"][0].tolist() == [0.0, 0.0]
    b2 = make_batch(data, np.array([0]), np.array([3]), cfg)  # chunks 3-6, 7-10: step 9 in the second
    assert b2["success"][0].tolist() == [0.0, 1.0]
    assert b["value"][0].tolist() == pytest.approx([0.5 ** 8, 0.5 ** 4, 1.0])  # obs at 1, 5, 9
    assert b["value"][1].tolist() == [0.0, 0.0, 0.0]  # the failed episode
    assert b["chunk_valid"][1].tolist() == [True, True] and b["obs_valid"][1].tolist() == [True, True, False]


def test_failures_and_success_ends_are_oversampled() -> None:
    data = toy([10, 10], [True, False])
    w = step_weights(data, 4, WMTrainConfig(oversample_failures=2.0, oversample_success_end=3.0))
    assert w.sum() == pytest.approx(1.0)
    assert w[0] < w[10]  # a failure step is drawn more often than an early success step
    assert w[9] == pytest.approx(3 * w[0]) and w[5] == pytest.approx(w[0])


def test_split_is_seeded_and_disjoint() -> None:
    a, b = split_episodes(20, 0.2, 3)
    assert len(b) == 4 and not set(a) & set(b) and len(a) + len(b) == 20
    assert np.array_equal(b, split_episodes(20, 0.2, 3)[1]) and not np.array_equal(b, split_episodes(20, 0.2, 4)[1])
    assert len(split_episodes(1, 0.5, 0)[1]) == 0


def test_store_errors_name_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(WorldModelDataError, match="not an EpisodeStore"):
        load_episodes([tmp_path / "nothing.zarr"], WorldModelConfig())
    from vla.data.store import EpisodeStore
    from vla.data.synthetic import default_schema, synthetic_episode

    schema = default_schema(cameras=("front",), image_size=8, state_dim=4, action_dim=3)
    with EpisodeStore.create(tmp_path / "s.zarr", schema) as store:
        store.append_episode(synthetic_episode(schema, length=12, seed=0))
    with pytest.raises(WorldModelDataError, match=r"no camera 'agentview'.*front"):
        load_episodes([tmp_path / "s.zarr"], WorldModelConfig(cameras=["agentview"]))
    with pytest.raises(WorldModelDataError, match=r"probe_dims \[9\].*size 4"):
        load_episodes([tmp_path / "s.zarr"], WorldModelConfig(probe_dims=[9]))
    with pytest.raises(WorldModelDataError, match="action size 3, the world model needs 7"):
        load_episodes([tmp_path / "s.zarr"], WorldModelConfig(action_dim=7))
