"""Which steps each refinement method supervises, over a real store with known flags."""

from pathlib import Path

import numpy as np
import pytest

from vla.data.store import EpisodeStore
from vla.refine import weights as rw
from vla.refine.labels import build_step_labels

from .test_labels import SCHEMA, make


@pytest.fixture
def store(tmp_path: Path) -> EpisodeStore:
    s = EpisodeStore.create(tmp_path / "s.zarr", SCHEMA)
    s.append_episode(make(0, "demo", True, [0, 0, 0]))                    # 0-2 demo
    s.append_episode(make(1, "rollout", False, [0, 0, 0, 0]))             # 3-6 own failure
    s.append_episode(make(2, "intervention", True, [0, 0, 1, 1, 0, 0]))   # 7-12 takeover, hand back, success
    s.append_episode(make(3, "intervention", True, [1, 1]))               # 13-14 takeover from the start
    return s


def weights_for(store: EpisodeStore, method: str, critic: np.ndarray | None = None,
                share: float | None = None) -> rw.StepWeights:
    table = store.table()
    return rw.method_weights(method, build_step_labels(store), table.success, table.source == "demo",
                             critic_weight=critic, demo_share=share)


def supervised(w: rw.StepWeights) -> list[int]:
    return np.flatnonzero(w.loss > 0).tolist()


def test_each_method_supervises_its_steps(store: EpisodeStore) -> None:
    assert supervised(weights_for(store, "sft")) == list(range(15))
    # dagger trains on every step as sft does: its rollouts' steps already carry the expert's labels
    np.testing.assert_array_equal(weights_for(store, "dagger").loss, weights_for(store, "sft").loss)
    assert supervised(weights_for(store, "filtered_bc")) == [0, 1, 2, *range(7, 15)]
    # corrections only: an all-intervention episode is a correction, not a demo
    assert supervised(weights_for(store, "hg_dagger")) == [0, 1, 2, 9, 10, 13, 14]
    assert supervised(weights_for(store, "rac")) == [0, 1, 2, 9, 10, 13, 14]
    critic = np.linspace(0.1, 2.0, 15).astype(np.float32)
    habc = weights_for(store, "habc", critic)
    np.testing.assert_allclose(habc.loss[[0, 1, 2, 9, 10, 13, 14]], 1.0)  # demos and corrections
    np.testing.assert_allclose(habc.loss[[3, 4, 5, 6, 7, 8, 11, 12]], critic[[3, 4, 5, 6, 7, 8, 11, 12]])
    # habc.demo_weight scales demonstrations and corrections against the critic-weighted steps
    table = store.table()
    heavy = rw.method_weights("habc", build_step_labels(store), table.success, table.source == "demo",
                              critic_weight=critic, demo_weight=3.0)
    np.testing.assert_allclose(heavy.loss[[0, 1, 2, 9, 10, 13, 14]], 3.0)
    np.testing.assert_allclose(heavy.loss[[3, 4, 5, 6, 7, 8, 11, 12]], critic[[3, 4, 5, 6, 7, 8, 11, 12]])
    awr = weights_for(store, "awr", critic)
    np.testing.assert_allclose(awr.loss[:3], 1.0)
    np.testing.assert_allclose(awr.loss[3:], critic[3:])  # interventions weighted like any rollout step


def test_sampling_is_uniform_over_supervised_steps_unless_a_demo_share_is_set(store: EpisodeStore) -> None:
    w = weights_for(store, "hg_dagger")
    np.testing.assert_allclose(w.sample[supervised(w)], 1 / 7)
    assert w.sample.sum() == pytest.approx(1.0) and (w.sample[w.loss == 0] == 0).all()
    half = weights_for(store, "rac", share=0.5)
    assert half.sample[:3].sum() == pytest.approx(0.5) and half.sample[[9, 10, 13, 14]].sum() == pytest.approx(0.5)
    # critic weights act through the loss only, never twice through sampling as well
    critic = np.linspace(0.1, 2.0, 15).astype(np.float32)
    habc = weights_for(store, "habc", critic)
    np.testing.assert_allclose(habc.sample, 1 / 15)


def test_mc_returns_and_awr_weights() -> None:
    from vla.refine.labels import StepLabels

    episode = np.array([0, 0, 0, 1, 1])
    lab = StepLabels(*(np.zeros(5, np.float32) for _ in range(2)), np.zeros(5, np.float32), np.zeros(5, bool),
                     np.zeros(5, bool), np.zeros(5, bool), np.arange(5), np.zeros(5, bool), episode)
    g = rw.mc_returns(lab, np.array([True, False]), gamma=0.5)
    np.testing.assert_allclose(g, [0.25, 0.5, 1.0, 0.0, 0.0])
    w = rw.awr_weights(g, np.full(5, 0.5, np.float32), beta=0.25, w_max=3.0)
    np.testing.assert_allclose(w, [np.exp(-1), 1.0, 3.0, np.exp(-2), np.exp(-2)], rtol=1e-6)
    with pytest.raises(ValueError, match="beta"):
        rw.awr_weights(g, g, beta=0.0, w_max=1.0)


def test_outcome_only_ablation_labels_interventions_with_the_episode_outcome(store: EpisodeStore) -> None:
    table = store.table()
    lab = rw.outcome_only_labels(build_step_labels(store, gamma=0.5), table.success, table.source == "demo", 0.5)
    assert lab.viability_mask.tolist() == [False] * 3 + [True] * 12
    np.testing.assert_array_equal(lab.viability[3:7], 0)
    np.testing.assert_array_equal(lab.viability[7:15], 1)  # takeover steps now count as the policy's success
    assert lab.policy_step[9] and not lab.demo[9]
    np.testing.assert_allclose(lab.efficiency[7:13], 0.5 ** np.arange(5, -1, -1))


def test_bad_input_is_named(store: EpisodeStore) -> None:
    with pytest.raises(ValueError, match="unknown refinement method 'habcc'"):
        weights_for(store, "habcc")
    with pytest.raises(ValueError, match="needs critic_weight"):
        weights_for(store, "habc")
    with pytest.raises(ValueError, match="demo_share"):
        weights_for(store, "rac", share=1.5)


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
    w = rw.method_weights("sft", labels, table.success, table.source == "demo",
                          group_shares={"demo": 0.5, "correction": 0.3, "policy": 0.2})
    assert np.isclose(w.sample[groups["demo"]].sum(), 0.5) and np.isclose(w.sample[groups["policy"]].sum(), 0.2)
    assert np.allclose(w.sample[groups["correction"]], 0.3 / 4)  # uniform inside a group
    # rac supervises no policy step: its share goes to the others in proportion
    w = rw.method_weights("rac", labels, table.success, table.source == "demo",
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
    w = rw.method_weights("habc", labels, table.success, table.source == "demo", critic_weight=critic,
                          group_shares=shares)
    moved = rw.sample_by_loss(w, groups)
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
