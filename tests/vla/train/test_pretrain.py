"""`vla train` composition: override routing, interface from the store, episode selection."""

from pathlib import Path

import numpy as np
import pytest

from vla.config import ConfigError
from vla.data.store import EpisodeStore
from vla.data.synthetic import default_schema, synthetic_episode
from vla.train.pretrain import build, split_overrides, task_balanced_weights


def test_overrides_are_routed_by_prefix() -> None:
    routed = split_overrides(["policy.d_model=64", "train.steps=3", "data.tasks=[reach]"])
    assert routed == {"policy": ["d_model=64"], "train": ["steps=3"], "data": ["tasks=[reach]"]}
    with pytest.raises(ConfigError, match=r"must start with policy\., train\. or data\."):
        split_overrides(["steps=3"])


def test_build_takes_the_interface_from_the_store(tmp_path: Path) -> None:
    schema = default_schema(image_size=16, cameras=("agentview",), state_dim=5, action_dim=3)
    store = EpisodeStore.create(tmp_path / "s.zarr", schema)
    for seed in range(6):
        store.append_episode(synthetic_episode(schema, seed))
    policy, _, train_ds, val_ds, stats = build(store.path, "tiny", "debug",
                                                   ["data.tasks=[reach]", "data.val_fraction=0.34",
                                                    "policy.chunk_size=8"])
    assert policy.cameras == ["agentview"] and policy.state_dim == 5 and policy.action_dim == 3
    assert train_ds.action_horizon == 8 and train_ds.obs_horizon == policy.n_obs_steps
    reach = set(store.select(task="reach").tolist())
    assert set(train_ds.episodes.tolist()) | set(val_ds.episodes.tolist()) == reach
    assert not set(train_ds.episodes.tolist()) & set(val_ds.episodes.tolist())
    assert stats["action"].count == sum(len(store.episode(int(e), ["action"])) for e in train_ds.episodes)
    state_only, *_ = build(store.path, "tiny", "debug", ["policy.cameras=[]"])
    assert state_only.cameras == []
    with pytest.raises(ValueError, match="no episodes match"):
        build(store.path, "tiny", "debug", ["data.tasks=[fly]"])
    with pytest.raises(ConfigError, match="did you mean 'd_model'"):
        build(store.path, "tiny", "debug", ["policy.dmodel=3"])


def aliased_store(tmp_path: Path) -> tuple[EpisodeStore, list[str], Path]:
    """Six synthetic episodes, their distinct instructions, and an aliases file for the first of them."""
    schema = default_schema(image_size=16, cameras=(), state_dim=5, action_dim=3)
    store = EpisodeStore.create(tmp_path / "s.zarr", schema)
    for seed in range(6):
        store.append_episode(synthetic_episode(schema, seed))
    stored = sorted(set(store.table().instruction.astype(str)))
    aliases = tmp_path / "aliases.json"
    aliases.write_text('{"' + stored[0] + '": ["say it another way"]}')
    return store, stored, aliases


def test_instruction_aliases_reach_the_training_windows_only(tmp_path: Path) -> None:
    store, stored, aliases = aliased_store(tmp_path)
    _, _, train_ds, val_ds, _ = build(store.path, "tiny", "debug", [f"data.instruction_aliases={aliases}",
                                                                    "data.val_fraction=0.34"])
    assert train_ds.instruction_aliases == {stored[0]: (stored[0], "say it another way")}
    assert val_ds is not None and not val_ds.instruction_aliases
    aliases.write_text('{"an instruction nobody gave": ["x"]}')
    with pytest.raises(ValueError, match="none of its instructions is in the training episodes"):
        build(store.path, "tiny", "debug", [f"data.instruction_aliases={aliases}"])


def test_the_checkpoint_carries_the_training_phrasings_grouped_by_meaning(tmp_path: Path) -> None:
    """What `instruction_vocab=checkpoint` grounds on: every training instruction with its aliases, kept
    through a resumed run."""
    from vla.policy.checkpoint import load_instruction_groups, load_model
    from vla.train.pretrain import instruction_groups, run_training
    from vla.train.trainer import latest_checkpoint

    assert instruction_groups(["b", "a", "a", " "], {"a": ("a", "say a")}) == [("a", "say a"), ("b",)]
    store, stored, aliases = aliased_store(tmp_path)
    small = ["policy.d_model=32", "policy.n_heads=2", "policy.trunk_layers=1", "policy.expert_layers=1",
             "policy.state_quats=[]", "data.val_fraction=0", f"data.instruction_aliases={aliases}"]
    want = sorted([(stored[0], "say it another way") if stored[0] < "say it another way"
                   else ("say it another way", stored[0]), *[(t,) for t in stored[1:]]])
    run_training(store.path, tmp_path / "run", "tiny", "debug", [*small, "train.steps=1"])
    assert load_instruction_groups(latest_checkpoint(tmp_path / "run")) == want
    run_training(store.path, tmp_path / "run", "tiny", "debug", [*small, "train.steps=2"], resume=True)
    last = latest_checkpoint(tmp_path / "run")
    assert last.name.endswith("2") and load_model(last)[0].instruction_groups == want


def test_task_balanced_weights_give_every_task_the_same_total() -> None:
    # episodes: 0 reach (10 steps), 1 push (30), 2 reach (20), 3 push (40, not selected)
    ends = np.array([10, 40, 60, 100])
    tasks = np.array(["reach", "push", "reach", "push"])
    w = task_balanced_weights(ends, tasks, np.array([0, 1, 2]))
    assert w.shape == (100,) and not w[60:].any()
    assert w[0:10].sum() + w[40:60].sum() == pytest.approx(1.0) and w[10:40].sum() == pytest.approx(1.0)
    assert w[0] == w[59] == pytest.approx(1 / 30) and w[10] == pytest.approx(1 / 30)


def test_balance_tasks_draws_short_tasks_as_often_as_long_ones(tmp_path: Path) -> None:
    schema = default_schema(image_size=16, cameras=(), state_dim=5, action_dim=3)
    store = EpisodeStore.create(tmp_path / "s.zarr", schema)
    for seed in range(8):  # alternating tasks, one of them 4x longer
        ep = synthetic_episode(schema, seed, length=20 if seed % 2 else 80)
        store.append_episode(ep)
    table = store.table()
    _, _, plain, _, _ = build(store.path, "tiny", "debug", ["data.val_fraction=0"])
    _, _, balanced, _, _ = build(store.path, "tiny", "debug", ["data.val_fraction=0", "data.balance_tasks=true"])
    assert plain.window_weights is None
    task_of_window = table.task[balanced.index.episode]
    totals = {t: balanced.window_weights[task_of_window == t].sum() for t in set(task_of_window)}
    assert len(totals) == 2 and max(totals.values()) == pytest.approx(min(totals.values()), rel=0.05)


def quaternion_store(path: Path, cameras: tuple[str, ...]) -> EpisodeStore:
    """Synthetic episodes whose state[3:7] is a unit quaternion (of either sign) in every row."""
    schema = default_schema(image_size=16, cameras=cameras, state_dim=9, action_dim=3)
    store = EpisodeStore.create(path, schema)
    rng = np.random.default_rng(0)
    for seed in range(4):
        ep = synthetic_episode(schema, seed)
        q = rng.standard_normal((len(ep.steps["state"]), 4))
        ep.steps["state"][:, 3:7] = q / np.linalg.norm(q, axis=1, keepdims=True)
        store.append_episode(ep)
    return store


def test_build_finds_the_quaternions_in_the_state_unless_told(tmp_path: Path) -> None:
    store = quaternion_store(tmp_path / "s.zarr", cameras=("agentview",))
    policy, *_ = build(store.path, "tiny", "debug", [])
    assert policy.state_quats == (3,)
    policy, *_ = build(store.path, "tiny", "debug", ["policy.state_quats=[]"])
    assert policy.state_quats == ()
    with pytest.raises(ValueError, match="state_dim is 9"):
        build(store.path, "tiny", "debug", ["policy.state_quats=[7]"])


def test_resume_keeps_the_quaternion_setting_of_the_run_it_continues(tmp_path: Path) -> None:
    """A run started without the 6D features (before them, or with state_quats=[]) resumes as it was
    trained: detection would give the model a different input layout than its saved weights."""
    from vla.policy.checkpoint import load_config as load_checkpoint_config
    from vla.train.pretrain import run_training
    from vla.train.trainer import latest_checkpoint

    store = quaternion_store(tmp_path / "s.zarr", cameras=())
    small = ["policy.d_model=32", "policy.n_heads=2", "policy.trunk_layers=1", "policy.expert_layers=1"]
    run_training(store.path, tmp_path / "run", "tiny", "debug", [*small, "policy.state_quats=[]", "train.steps=1"])
    run_training(store.path, tmp_path / "run", "tiny", "debug", [*small, "train.steps=2"], resume=True)
    last = latest_checkpoint(tmp_path / "run")
    assert last.name.endswith("2") and load_checkpoint_config(last).state_quats == ()


def test_training_starts_from_the_same_weights_for_the_same_seed(tmp_path: Path) -> None:
    """The model is built under train.seed: two runs of one config are the same run (they once differed
    from the first step, 0.80 vs 0.70 success for the main job's preset), another seed is another run."""
    import torch

    from vla.policy.checkpoint import load_tensors
    from vla.train.pretrain import run_training

    store = quaternion_store(tmp_path / "s.zarr", cameras=())
    small = ["policy.d_model=32", "policy.n_heads=2", "policy.trunk_layers=1", "policy.expert_layers=1",
             "train.steps=1", "train.ckpt_every=1"]
    weights = {}
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        torch.manual_seed(1234 + len(weights))  # whatever the caller's global RNG holds
        result = run_training(store.path, tmp_path / name, "tiny", "debug", [*small, f"train.seed={seed}"])
        weights[name] = load_tensors(result.last_checkpoint / "model.safetensors")
    assert all(np.array_equal(weights["a"][k], weights["b"][k]) for k in weights["a"])
    assert not all(np.array_equal(weights["a"][k], weights["c"][k]) for k in weights["a"])
