"""How per-step weights become training windows (the sampler every method shares), over a real store
with known flags."""

from pathlib import Path

import numpy as np
import pytest

from vla.data.store import EpisodeStore
from vla.refine import weights as rw
from vla.refine.labels import build_step_labels
from vla.refine.methods.habc import habc_loss
from vla.refine.methods.hg_dagger import correction_loss
from vla.refine.methods.sft import every_step_loss

from .test_labels import SCHEMA, make


@pytest.fixture
def store(tmp_path: Path) -> EpisodeStore:
    s = EpisodeStore.create(tmp_path / "s.zarr", SCHEMA)
    s.append_episode(make(0, "demo", True, [0, 0, 0]))                    # 0-2 demo
    s.append_episode(make(1, "rollout", False, [0, 0, 0, 0]))             # 3-6 own failure
    s.append_episode(make(2, "intervention", True, [0, 0, 1, 1, 0, 0]))   # 7-12 takeover, hand back, success
    s.append_episode(make(3, "intervention", True, [1, 1]))               # 13-14 takeover from the start
    return s


def supervised(w: rw.StepWeights) -> list[int]:
    return np.flatnonzero(w.loss > 0).tolist()


def test_sampling_is_uniform_over_supervised_steps_unless_a_demo_share_is_set(store: EpisodeStore) -> None:
    table, labels = store.table(), build_step_labels(store)
    is_demo = table.source == "demo"
    w, info = rw.shaped(correction_loss(labels, is_demo), labels, is_demo)
    np.testing.assert_allclose(w.sample[supervised(w)], 1 / 7)
    assert w.sample.sum() == pytest.approx(1.0) and (w.sample[w.loss == 0] == 0).all()
    assert info["supervised_steps"] == 7 and info["demo_supervised_steps"] == 3
    half, _ = rw.shaped(correction_loss(labels, is_demo), labels, is_demo, demo_share=0.5)
    assert half.sample[:3].sum() == pytest.approx(0.5) and half.sample[[9, 10, 13, 14]].sum() == pytest.approx(0.5)
    # critic weights act through the loss only, never twice through sampling as well
    critic = np.linspace(0.1, 2.0, 15).astype(np.float32)
    habc, _ = rw.shaped(habc_loss(labels, critic, 1.0), labels, is_demo)
    np.testing.assert_allclose(habc.sample, 1 / 15)
    with pytest.raises(ValueError, match="demo_share"):
        rw.shaped(correction_loss(labels, is_demo), labels, is_demo, demo_share=1.5)
    with pytest.raises(ValueError, match="no step is supervised"):
        rw.shaped(np.zeros(15, np.float32), labels, is_demo)


def test_demo_loss_marks_every_demo_step_and_nothing_else(store: EpisodeStore) -> None:
    store.append_episode(make(4, "demo", False, [0, 0]))  # 15-16: a failed demo is still a demo
    loss, demo = rw.demo_loss(store.table())
    assert loss.dtype == np.float32 and len(loss) == store.n_steps == 17
    assert np.flatnonzero(loss).tolist() == np.flatnonzero(demo).tolist() == [0, 1, 2, 15, 16]
    assert set(loss.tolist()) == {0.0, 1.0}


def test_group_shares_fix_each_groups_share_of_the_samples(store: EpisodeStore) -> None:
    table = store.table()
    labels = build_step_labels(store)
    groups = rw.step_groups(labels, table.source == "demo")
    assert np.flatnonzero(groups["demo"]).tolist() == [0, 1, 2]
    assert np.flatnonzero(groups["correction"]).tolist() == [9, 10, 13, 14]
    assert np.flatnonzero(groups["policy"]).tolist() == [3, 4, 5, 6, 7, 8, 11, 12]
    is_demo = table.source == "demo"
    w, _ = rw.shaped(every_step_loss(labels), labels, is_demo,
                     group_shares={"demo": 0.5, "correction": 0.3, "policy": 0.2})
    assert np.isclose(w.sample[groups["demo"]].sum(), 0.5) and np.isclose(w.sample[groups["policy"]].sum(), 0.2)
    assert np.allclose(w.sample[groups["correction"]], 0.3 / 4)  # uniform inside a group
    # rac supervises no policy step: its share goes to the others in proportion
    w, _ = rw.shaped(correction_loss(labels, is_demo), labels, is_demo,
                     group_shares={"demo": 0.5, "correction": 0.3, "policy": 0.2})
    assert np.isclose(w.sample[groups["demo"]].sum(), 0.5 / 0.8) and w.sample[groups["policy"]].sum() == 0
    stats = rw.group_weight_stats(w, groups)
    assert stats["policy_supervised_steps"] == 0 and np.isclose(stats["demo_sample_share"], 0.625)
    assert stats["correction_weight_mean"] == 1.0
    with pytest.raises(ValueError, match="unknown group 'polcy'"):
        rw.group_sample_distribution(w.loss, groups, {"polcy": 1.0})
    with pytest.raises(ValueError, match="no supervised step"):
        rw.group_sample_distribution(w.loss, groups, {"policy": 1.0})


def test_sample_by_loss_moves_the_critic_weights_into_the_sampler(store: EpisodeStore) -> None:
    table = store.table()
    labels = build_step_labels(store)
    groups = rw.step_groups(labels, table.source == "demo")
    critic = np.full(15, 0.01, np.float32)
    critic[[7, 8]] = 0.9  # the critic endorses two of the eight policy steps
    shares = {"demo": 0.4, "correction": 0.3, "policy": 0.3}
    w, _ = rw.shaped(habc_loss(labels, critic, 1.0), labels, table.source == "demo", group_shares=shares)
    moved = rw.sample_by_loss(w, groups)
    by_loss, _ = rw.shaped(habc_loss(labels, critic, 1.0), labels, table.source == "demo", group_shares=shares,
                           by_loss=True)
    np.testing.assert_array_equal(by_loss.sample, moved.sample)  # shaped(by_loss=True) is this move
    for g, share in shares.items():  # every group keeps its share of the samples
        assert np.isclose(moved.sample[groups[g]].sum(), share)
    # inside the policy group, draws follow the weights: 0.9 against 0.01
    pol = np.flatnonzero(groups["policy"])
    np.testing.assert_allclose(moved.sample[pol], 0.3 * critic[pol] / critic[pol].sum())
    assert moved.sample[[7, 8]].sum() > 0.29 and w.sample[[7, 8]].sum() == pytest.approx(0.3 * 2 / 8)
    # the weight now acts once, through the sampler: every supervised step has loss 1
    assert set(moved.loss[moved.loss > 0].tolist()) == {1.0}
    assert (moved.loss > 0).tolist() == (w.loss > 0).tolist()
    np.testing.assert_allclose(moved.sample[groups["demo"]], 0.4 / 3)  # uniform weights stay uniform
    with pytest.raises(ValueError, match="no supervised step"):
        rw.sample_by_loss(rw.StepWeights(loss=np.zeros(15, np.float32), sample=w.sample), groups)


def test_executed_chunk_ends_stop_a_policy_window_at_its_chunk() -> None:
    # two episodes: 0-9 the policy's own (chunks of 4: 0-3, 4-7, 8-9), 10-19 with a takeover at 13-14
    own = np.ones(20, bool)
    own[13:15] = False
    ends = rw.executed_chunk_ends(np.array([0, 10]), np.array([10, 20]), own, 4)
    assert ends[:10].tolist() == [4, 4, 4, 4, 8, 8, 8, 8, 10, 10]
    # the takeover ends the chunk (10-12 stop at 13), the policy re-plans from the hand-back at 15
    assert ends[10:13].tolist() == [13, 13, 13] and ends[15:20].tolist() == [19, 19, 19, 19, 20]
    assert ends[13:15].tolist() == [20, 20]  # not the policy's: the episode's end
    with pytest.raises(ValueError, match="own must have one value per store step"):
        rw.executed_chunk_ends(np.array([0]), np.array([10]), own, 4)
