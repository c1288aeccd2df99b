"""Per-step refinement labels over a real store."""

from pathlib import Path

import numpy as np
import pytest

from vla.data.schema import Episode
from vla.data.store import EpisodeStore
from vla.data.synthetic import default_schema, synthetic_episode
from vla.refine.labels import build_step_labels

SCHEMA = default_schema(image_size=8)


def make(seed: int, source: str, success: bool, flags: list[int], version: int = 0) -> Episode:
    ep = synthetic_episode(SCHEMA, seed, length=len(flags))
    ep.source, ep.success = source, success
    ep.steps["is_intervention"] = np.array(flags, bool)
    ep.steps["is_recovery"] = np.zeros(len(flags), bool)
    ep.steps["policy_version"] = np.full(len(flags), version, np.int32)
    return ep


@pytest.fixture
def store(tmp_path: Path) -> EpisodeStore:
    s = EpisodeStore.create(tmp_path / "s.zarr", SCHEMA)
    s.append_episode(make(0, "demo", True, [0, 0, 0]))                 # steps 0-2
    s.append_episode(make(1, "rollout", True, [0, 0, 0, 0]))           # steps 3-6, policy success
    s.append_episode(make(2, "rollout", True, [0, 0, 1, 1, 0, 0]))     # 7-12, HG-DAgger hand-back
    s.append_episode(make(3, "intervention", True, [0, 0, 1, 1], 1))   # 13-16, RaC, old version
    return s


def test_labels_follow_intervention_aware_credit(store: EpisodeStore) -> None:
    lab = build_step_labels(store, gamma=0.5)
    np.testing.assert_array_equal(lab.demo, [1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1])
    np.testing.assert_array_equal(lab.viability_mask, [0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0])
    np.testing.assert_array_equal(lab.viability[3:7], 1)  # own success
    np.testing.assert_array_equal(lab.viability[7:9], 0)  # segment that needed a takeover
    np.testing.assert_array_equal(lab.viability[11:13], 1)  # last segment of a success
    np.testing.assert_array_equal(lab.viability[13:15], 0)  # RaC: takeover then end
    np.testing.assert_allclose(lab.efficiency[3:7], [0.125, 0.25, 0.5, 1.0])
    np.testing.assert_array_equal(lab.efficiency_mask, [0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(lab.next_index[3:7], [4, 5, 6, 6])
    np.testing.assert_array_equal(np.flatnonzero(lab.done_success), [2, 6, 12, 16])
    current = build_step_labels(store, current_version=1)
    np.testing.assert_array_equal(np.flatnonzero(current.viability_mask), [13, 14])
    subset = build_step_labels(store, episodes=np.array([1]))
    assert (subset.episode[:3] == -1).all() and not subset.viability_mask[7:].any()
