"""ReGuide's pure parts: clustering, phase order, softmin distance, thresholds, gate, late steps and
the phase state machine."""

import numpy as np
import pytest
import torch

from worldmodel import reguide_math as rm


def test_kmeans_finds_separated_blobs_and_is_seeded() -> None:
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    x = np.concatenate([c + 0.1 * rng.standard_normal((30, 2)) for c in centres])
    c, labels = rm.kmeans(x, 3, seed=1)
    for j in range(3):  # every blob is one cluster
        assert len(set(labels[30 * j:30 * (j + 1)].tolist())) == 1
    assert len(set(labels.tolist())) == 3
    assert np.allclose(np.sort(c[:, 0]), np.sort(centres[:, 0]), atol=0.1)
    assert np.array_equal(rm.kmeans(x, 3, seed=1)[1], labels)
    with pytest.raises(ValueError, match=r"k must be in 1\.\.90"):
        rm.kmeans(x, 91)


def test_phases_follow_the_clusters_median_time_and_none_is_empty() -> None:
    # clusters named out of time order: 2 is earliest, then 0, then 3, then 1
    labels = np.array([2, 2, 0, 0, 3, 3, 1, 1])
    t = np.array([0.0, 0.1, 0.3, 0.35, 0.6, 0.65, 0.9, 1.0])
    assert rm.phases_from_clusters(labels, t, 2).tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert rm.phases_from_clusters(labels, t, 4).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert rm.phases_from_clusters(labels, t, 1).tolist() == [0] * 8
    with pytest.raises(ValueError, match=r"n_phases must be in 1\.\.4"):
        rm.phases_from_clusters(labels, t, 5)


def test_softmin_distance_tends_to_the_nearest_prototype_and_ignores_padding() -> None:
    z = torch.tensor([[0.0, 0.0]])
    protos = torch.tensor([[3.0, 4.0], [6.0, 8.0], [0.0, 100.0]])
    assert rm.softmin_distance(z, protos, tau=1e-4).item() == pytest.approx(5.0, abs=1e-3)
    soft = rm.softmin_distance(z, protos, tau=2.0).item()
    # -tau log sum exp(-d / tau) <= min d, and equal to it minus tau log(count) for equal distances
    assert soft < 5.0
    assert rm.softmin_distance(z, torch.tensor([[3.0, 4.0], [4.0, 3.0]]), tau=2.0).item() == pytest.approx(
        5.0 - 2.0 * np.log(2), abs=1e-5)
    mask = torch.tensor([False, True, True])  # the nearest prototype is padding
    assert rm.softmin_distance(z, protos, tau=1e-4, mask=mask).item() == pytest.approx(10.0, abs=1e-3)
    per_row = torch.stack([protos, protos + 1.0])  # [B, P, L]: each row its own phase's prototypes
    d = rm.softmin_distance(torch.zeros(2, 2), per_row, tau=1e-4)
    assert d[0].item() == pytest.approx(5.0, abs=1e-3) and d[1].item() == pytest.approx(np.hypot(4, 5), abs=1e-3)


def test_thresholds_are_per_phase_percentiles() -> None:
    dist = np.array([1.0, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0, 40.0])
    phase = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    th = rm.phase_thresholds(dist, phase, 3, [0, 50, 100])
    assert th[0].tolist() == [1.0, 2.5, 4.0] and th[1].tolist() == [10.0, 25.0, 40.0]
    assert th[2].tolist() == [1.0, 7.0, 40.0]  # an empty phase takes every point's percentiles


def test_gate_guides_only_drifted_but_recoverable_states() -> None:
    d = np.array([0.5, 1.0, 1.5, 2.0, 2.5])
    assert rm.guidance_gate(d, np.full(5, 1.0), np.full(5, 2.0)).tolist() == [False, False, True, True, False]


def test_late_steps_are_the_last_fraction_of_the_euler_steps() -> None:
    times = [k / 10 for k in range(10)]
    assert [t for t in times if rm.late_step(t, 10, 0.3)] == [0.7, 0.8, 0.9]
    assert [t for t in times if rm.late_step(t, 10, 0.01)] == [0.9]  # at least the last step
    assert not any(rm.late_step(t, 10, 0.0) for t in times)
    assert all(rm.late_step(t, 10, 1.0) for t in times)


def test_phase_state_machine_switches_after_consecutive_evidence_only() -> None:
    phase, counter = np.array([0, 0, 1]), np.zeros(3, np.int64)
    thr_next = np.array([1.0, 1.0, 1.0])
    # row 0: next phase closer by more than the margin and within its threshold; row 1: not within;
    # row 2: already in the last phase
    d_cur, d_next = np.array([2.0, 2.0, 2.0]), np.array([0.5, 1.5, 0.1])
    phase, counter = rm.phase_step(phase, counter, d_cur, d_next, thr_next, 0.2, 2, 2)
    assert phase.tolist() == [0, 0, 1] and counter.tolist() == [1, 0, 0]
    phase, counter = rm.phase_step(phase, counter, d_cur, d_next, thr_next, 0.2, 2, 2)
    assert phase.tolist() == [1, 0, 1] and counter.tolist() == [0, 0, 0]
    # the evidence must be consecutive: one chunk without it resets the count
    p, c = rm.phase_step(np.array([0]), np.array([1]), np.array([2.0]), np.array([1.95]), np.array([5.0]), 0.2, 2, 3)
    assert p.tolist() == [0] and c.tolist() == [0]


def test_the_demos_share_of_the_samples() -> None:
    from worldmodel.reguide_refine import demo_share

    assert demo_share(600, 0, 0.2, "fixed") == 1.0  # nothing absorbed yet: demos only
    assert demo_share(600, 100, 0.2, "fixed") == 0.2  # the released code's expert share
    assert np.isclose(demo_share(600, 100, 0.2, "floor"), 600 / 700)  # a few successes: not oversampled
    assert demo_share(600, 9000, 0.2, "floor") == 0.2  # many: the expert share, as released


def test_state_feature_matrix_selects_dims_and_differences() -> None:
    s = np.arange(10.0) ** 2
    m = rm.state_feature_matrix("7:9, 2, 4:6-0:2", 10)
    assert m.shape == (5, 10)
    assert np.allclose(m @ s, [49, 64, 4, 16 - 0, 25 - 1])
    assert np.array_equal(rm.state_feature_matrix("", 4), np.eye(4))
    for bad, msg in [("3:1", "selects no dims"), ("9:11", "outside"), ("x", "cannot read"),
                     ("0:3-5:7", "subtracts 2 dims from 3")]:
        with pytest.raises(ValueError, match=msg):
            rm.state_feature_matrix(bad, 10)
