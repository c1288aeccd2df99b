"""Intervention-aware credit: segments, outcome labels and masks at intervention boundaries."""

import numpy as np
import pytest

from vla.refine.credit import Segment, demo_mask, outcome_labels, segments, steps_to_go


def test_segments_split_at_every_flag_change() -> None:
    flags = np.array([0, 0, 1, 1, 1, 0, 1], bool)
    assert segments(flags) == [Segment(0, 2, False), Segment(2, 5, True), Segment(5, 6, False), Segment(6, 7, True)]
    assert segments(np.zeros(0, bool)) == []
    with pytest.raises(ValueError, match="1-D"):
        segments(np.zeros((2, 2), bool))


def test_policy_segment_before_takeover_is_a_failure_last_gets_outcome() -> None:
    # policy, takeover, hand back (HG-DAgger), policy until the end, successful episode
    flags = np.array([0, 0, 0, 1, 1, 0, 0], bool)
    label, mask = outcome_labels(flags, success=True)
    np.testing.assert_array_equal(mask, [1, 1, 1, 0, 0, 1, 1])
    np.testing.assert_array_equal(label, [0, 0, 0, 0, 0, 1, 1])
    label, mask = outcome_labels(flags, success=False)
    np.testing.assert_array_equal(label[mask], 0)


def test_rac_episode_ends_with_the_intervention() -> None:
    flags = np.array([0, 0, 1, 1, 1], bool)  # RaC: rewind + correction ends the episode
    label, mask = outcome_labels(flags, success=True)
    np.testing.assert_array_equal(mask, [1, 1, 0, 0, 0])
    np.testing.assert_array_equal(label[:2], 0)  # the policy needed help: its own segment failed


def test_only_the_current_policy_version_is_labelled() -> None:
    flags = np.zeros(4, bool)
    label, mask = outcome_labels(flags, True, policy_version=np.array([1, 1, 2, 2]), current_version=2)
    np.testing.assert_array_equal(mask, [0, 0, 1, 1])
    np.testing.assert_array_equal(label, 1)
    with pytest.raises(ValueError, match="policy_version"):
        outcome_labels(flags, True, current_version=2)


def test_steps_to_go_and_demo_mask() -> None:
    np.testing.assert_array_equal(steps_to_go(4), [3, 2, 1, 0])
    flags = np.array([0, 1, 1, 0], bool)
    np.testing.assert_array_equal(demo_mask(flags, "rollout"), flags)
    assert demo_mask(flags, "demo").all()
