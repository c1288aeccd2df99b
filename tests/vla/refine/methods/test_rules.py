"""Which steps each built-in method supervises, and with what weight: their loss rules over a real store
with known flags (the fixture of tests/vla/refine/test_weights.py)."""

import numpy as np
import pytest

from vla.data.store import EpisodeStore
from vla.refine.labels import StepLabels, build_step_labels, mc_returns
from vla.refine.methods.awr import awr_loss, awr_weights
from vla.refine.methods.filtered_bc import filtered_loss
from vla.refine.methods.habc import habc_loss
from vla.refine.methods.hg_dagger import correction_loss
from vla.refine.methods.sft import every_step_loss

from ..test_weights import store  # noqa: F401  (the fixture)


def supervised(loss: np.ndarray) -> list[int]:
    return np.flatnonzero(loss > 0).tolist()


def test_each_method_supervises_its_steps(store: EpisodeStore) -> None:  # noqa: F811
    table, labels = store.table(), build_step_labels(store)
    is_demo = np.asarray(table.source == "demo")
    # sft and dagger train on every step (dagger's rollouts already carry the expert's labels)
    assert supervised(every_step_loss(labels)) == list(range(15))
    assert supervised(filtered_loss(labels, table.success, is_demo)) == [0, 1, 2, *range(7, 15)]
    # hg_dagger and rac: corrections only; an all-intervention episode is a correction, not a demo
    assert supervised(correction_loss(labels, is_demo)) == [0, 1, 2, 9, 10, 13, 14]
    critic = np.linspace(0.1, 2.0, 15).astype(np.float32)
    habc = habc_loss(labels, critic, 1.0)
    np.testing.assert_allclose(habc[[0, 1, 2, 9, 10, 13, 14]], 1.0)  # demos and corrections
    np.testing.assert_allclose(habc[[3, 4, 5, 6, 7, 8, 11, 12]], critic[[3, 4, 5, 6, 7, 8, 11, 12]])
    # demo_weight scales demonstrations and corrections against the critic-weighted steps, once
    heavy = habc_loss(labels, critic, 3.0)
    np.testing.assert_allclose(heavy[[0, 1, 2, 9, 10, 13, 14]], 3.0)
    np.testing.assert_allclose(heavy[[3, 4, 5, 6, 7, 8, 11, 12]], critic[[3, 4, 5, 6, 7, 8, 11, 12]])
    awr = awr_loss(labels, is_demo, critic)
    np.testing.assert_allclose(awr[:3], 1.0)
    np.testing.assert_allclose(awr[3:], critic[3:])  # interventions weighted like any rollout step


def test_mc_returns_and_awr_weights() -> None:
    episode = np.array([0, 0, 0, 1, 1])
    lab = StepLabels(*(np.zeros(5, np.float32) for _ in range(2)), np.zeros(5, np.float32), np.zeros(5, bool),
                     np.zeros(5, bool), np.zeros(5, bool), np.arange(5), np.zeros(5, bool), episode)
    g = mc_returns(lab, np.array([True, False]), gamma=0.5)
    np.testing.assert_allclose(g, [0.25, 0.5, 1.0, 0.0, 0.0])
    w = awr_weights(g, np.full(5, 0.5, np.float32), beta=0.25, w_max=3.0)
    np.testing.assert_allclose(w, [np.exp(-1), 1.0, 3.0, np.exp(-2), np.exp(-2)], rtol=1e-6)
    with pytest.raises(ValueError, match="beta"):
        awr_weights(g, g, beta=0.0, w_max=1.0)


def test_outcome_only_ablation_labels_interventions_with_the_episode_outcome(store: EpisodeStore) -> None:  # noqa: F811
    from vla.refine.habc_math import outcome_only_labels

    table = store.table()
    lab = outcome_only_labels(build_step_labels(store, gamma=0.5), table.success, table.source == "demo", 0.5)
    assert lab.viability_mask.tolist() == [False] * 3 + [True] * 12
    np.testing.assert_array_equal(lab.viability[3:7], 0)
    np.testing.assert_array_equal(lab.viability[7:15], 1)  # takeover steps now count as the policy's success
    assert lab.policy_step[9] and not lab.demo[9]
    np.testing.assert_allclose(lab.efficiency[7:13], 0.5 ** np.arange(5, -1, -1))
