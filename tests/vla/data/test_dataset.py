"""Training windows: history/chunk positions, padding masks at episode edges, DataLoader batches."""

from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, default_collate

from vla.data.dataset import WindowDataset, split_episodes, window_positions
from vla.data.store import EpisodeStore
from vla.data.synthetic import default_schema, synthetic_episode

SCHEMA = default_schema(image_size=16)


def test_window_positions_pad_and_mask() -> None:
    obs, obs_mask, act, act_mask = window_positions(t=11, start=10, end=15, obs_horizon=3, action_horizon=6)
    assert list(obs) == [10, 10, 11] and list(obs_mask) == [False, True, True]
    assert list(act) == [11, 12, 13, 14, 14, 14] and list(act_mask) == [True] * 4 + [False] * 2


@pytest.fixture
def store(tmp_path: Path) -> EpisodeStore:
    s = EpisodeStore.create(tmp_path / "s.zarr", SCHEMA, image_chunk=4)
    for seed in range(5):
        s.append_episode(synthetic_episode(SCHEMA, seed))
    return s


@pytest.mark.parametrize("cache", ["memory", "chunks"])
def test_windows_match_the_episodes(store: EpisodeStore, cache: str) -> None:
    ds = WindowDataset(store, obs_horizon=2, action_horizon=16, cache=cache)
    assert ds.cache == cache
    assert len(ds) == store.n_steps
    rng = np.random.default_rng(0)
    for i in [0, len(ds) - 1, *rng.integers(0, len(ds), 20)]:
        item = ds[int(i)]
        ep = store.episode(item["episode_index"])
        t = item["step_index"]
        n = len(ep)
        for k in range(16):
            src = min(t + k, n - 1)
            np.testing.assert_array_equal(item["action"][k].numpy(), ep.steps["action"][src])
            assert bool(item["action_mask"][k]) == (t + k < n)
        for j, offset in enumerate((-1, 0)):
            src = max(t + offset, 0)
            np.testing.assert_array_equal(item["images"]["agentview"][j].numpy(), ep.steps["images/agentview"][src])
            np.testing.assert_array_equal(item["state"][j].numpy(), ep.steps["state"][src])
            assert bool(item["obs_mask"][j]) == (t + offset >= 0)
        # the state the chunk led to: 16 steps on, or the episode's last near its end
        np.testing.assert_array_equal(item["future_state"].numpy(), ep.steps["state"][min(t + 16, n - 1)])
        assert item["instruction"] == ep.instruction and item["task"] == ep.task


@pytest.mark.parametrize("cache", ["memory", "chunks"])
def test_batched_fetch_equals_stacked_items(store: EpisodeStore, cache: str) -> None:
    ds = WindowDataset(store, obs_horizon=3, action_horizon=5, cache=cache)
    idx = [0, 5, len(ds) - 1, 17, 17]
    batch = ds.get_batch(idx)
    stacked = default_collate([ds[i] for i in idx])
    for key in ("state", "future_state", "obs_mask", "action", "action_mask", "is_intervention", "episode_index",
                "step_index"):
        assert torch.equal(batch[key], stacked[key]), key
    for cam in SCHEMA.cameras:
        assert torch.equal(batch["images"][cam], stacked["images"][cam])
    assert batch["instruction"] == stacked["instruction"] and batch["task"] == stacked["task"]
    # A plain DataLoader (default collate) and ds.loader() give the same batch for the same order.
    plain = next(iter(DataLoader(ds, batch_size=4, shuffle=False)))
    fast = next(iter(ds.loader(4, shuffle=False, num_workers=0)))
    for key in ("state", "action", "action_mask"):
        assert torch.equal(plain[key], fast[key]), key


def test_threaded_batches_equal_the_dataloader_order(store: EpisodeStore) -> None:
    ds = WindowDataset(store, obs_horizon=2, action_horizon=4, cache="memory")
    threaded = list(ds.loader(16, shuffle=True, seed=3, threads=2))
    plain = list(ds.loader(16, shuffle=True, seed=3, num_workers=0))
    assert len(threaded) == len(plain) == len(ds.loader(16, threads=2)) > 1
    for a, b in zip(threaded, plain, strict=True):
        assert torch.equal(a["action"], b["action"]) and torch.equal(a["images"]["agentview"], b["images"]["agentview"])
    with pytest.raises(ValueError, match="threads > 0 needs cache='memory'"):
        WindowDataset(store, cache="chunks").loader(4, threads=2)


def test_dataloader_batches_with_workers(store: EpisodeStore) -> None:
    ds = WindowDataset(store.path, episodes=[1, 3], obs_horizon=1, action_horizon=8, cameras=["agentview"])
    batch = next(iter(DataLoader(ds, batch_size=7, shuffle=True, num_workers=2)))
    assert batch["images"]["agentview"].shape == (7, 1, 16, 16, 3)
    assert batch["images"]["agentview"].dtype == torch.uint8
    assert batch["action"].shape == (7, 8, 7) and batch["action_mask"].dtype == torch.bool
    assert set(batch["episode_index"].tolist()) <= {1, 3} and len(batch["instruction"]) == 7


def test_bad_arguments(store: EpisodeStore) -> None:
    with pytest.raises(KeyError, match=r"camera 'wrist'.*agentview"):
        WindowDataset(store, cameras=["wrist"])
    with pytest.raises(IndexError, match="episode indices"):
        WindowDataset(store, episodes=[9])
    with pytest.raises(ValueError, match="obs_horizon"):
        WindowDataset(store, obs_horizon=0)
    with pytest.raises(ValueError, match="cache must be"):
        WindowDataset(store, cache="disk")
    assert WindowDataset(store, memory_budget_gb=1e-9).cache == "chunks"
    assert WindowDataset(store).cache == "memory"


def test_split_episodes_is_seeded_and_disjoint() -> None:
    train, val = split_episodes(np.arange(20), 0.2, seed=3)
    assert len(val) == 4 and not set(train) & set(val) and len(train) + len(val) == 20
    assert np.array_equal(split_episodes(np.arange(20), 0.2, seed=3)[1], val)


def test_loss_and_sample_weights_follow_the_action_steps(store: EpisodeStore) -> None:
    n = store.n_steps
    loss_w = np.arange(n, dtype=np.float32)
    sample_w = np.zeros(n)
    sample_w[5] = 1.0
    ds = WindowDataset(store, obs_horizon=1, action_horizon=4, loss_weights=loss_w, sample_weights=sample_w)
    batch = ds.get_batch(np.arange(len(ds)))
    item = ds[3]
    t = int(ds.index.step[3])
    expected = np.where(item["action_mask"].numpy(), loss_w[np.minimum(t + np.arange(4), int(ds.index.end[3]) - 1)], 0)
    np.testing.assert_allclose(item["loss_weight"].numpy(), expected)
    np.testing.assert_allclose(batch["loss_weight"][3].numpy(), expected)
    assert np.flatnonzero(ds.window_weights).tolist() == [int(np.flatnonzero(ds.index.step == 5)[0])]
    with pytest.raises(ValueError, match="loss_weights must have one value per store step"):
        WindowDataset(store, loss_weights=np.ones(n + 1))
    with pytest.raises(ValueError, match="zero weight"):
        WindowDataset(store, sample_weights=np.zeros(n))


def test_supervise_until_stops_a_windows_loss_weights(store: EpisodeStore) -> None:
    n = store.n_steps
    until = np.arange(n) + 2  # every window supervises its first two actions only
    ds = WindowDataset(store, obs_horizon=1, action_horizon=4, loss_weights=np.ones(n, np.float32),
                       supervise_until=until)
    full = WindowDataset(store, obs_horizon=1, action_horizon=4, loss_weights=np.ones(n, np.float32))
    batch, plain = ds.get_batch(np.arange(len(ds))), full.get_batch(np.arange(len(ds)))
    np.testing.assert_array_equal(batch["loss_weight"][:, 2:], 0)
    np.testing.assert_array_equal(batch["loss_weight"][:, :2], plain["loss_weight"][:, :2])
    np.testing.assert_array_equal(ds[3]["loss_weight"].numpy(), batch["loss_weight"][3].numpy())
    assert plain["loss_weight"][:, 2:].sum() > 0  # without the limit those actions count
    with pytest.raises(ValueError, match="give loss_weights too"):
        WindowDataset(store, supervise_until=until)


def test_instruction_aliases_draw_phrasings_reproducibly(store: EpisodeStore, tmp_path: Path) -> None:
    from vla.data.dataset import alias_instruction, load_instruction_aliases

    stored = sorted({store.episode(e).instruction for e in range(len(store.table()))})
    aliases = {stored[0]: ["first paraphrase", "second paraphrase"]}
    ds = WindowDataset(store, obs_horizon=1, action_horizon=4, instruction_aliases=aliases)
    idx = np.arange(len(ds))
    batch = ds.get_batch(idx)
    eps = [store.episode(int(e)).instruction for e in batch["episode_index"]]
    seen = {t for t, e in zip(batch["instruction"], eps, strict=True) if e == stored[0]}
    assert seen == {stored[0], "first paraphrase", "second paraphrase"}  # the stored one stays among them
    assert all(t == e for t, e in zip(batch["instruction"], eps, strict=True) if e != stored[0])  # no aliases
    assert ds.get_batch(idx)["instruction"] == batch["instruction"]  # the same windows, the same phrasings
    assert ds[int(idx[0])]["instruction"] == ds[int(idx[0])]["instruction"]
    assert alias_instruction("other", aliases, np.random.default_rng(0)) == "other"
    # the file: JSON or YAML, checked with one line naming the file and the problem
    good = tmp_path / "aliases.yaml"
    good.write_text(f"'{stored[0]}': ['first paraphrase', '{stored[0]}']\n")
    assert load_instruction_aliases(good) == {stored[0]: ["first paraphrase"]}
    for text, match in (("[1, 2]", "expected a non-empty mapping"), ("a: []", "paraphrases of 'a'"),
                        ("a: ['  ']", "paraphrases of 'a'"), ("a: [b", "not valid YAML")):
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
        with pytest.raises(ValueError, match=match):
            load_instruction_aliases(bad)
    with pytest.raises(FileNotFoundError, match="instruction aliases file not found"):
        load_instruction_aliases(tmp_path / "none.json")
