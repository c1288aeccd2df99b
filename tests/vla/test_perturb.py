"""vla.perturb: the spec syntax, the presets, and each perturbation's math on plain arrays."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from vla.perturb import KINDS, Perturber, blur_image, load_presets, parse_perturb, quat_mul_xyzw

POSE = np.array([[0.10, 0.20, 0.30, 0.0, 0.0, 0.0, 1.0], [0.4, -0.1, 0.0, 0.0, 0.0, 0.0, 1.0]])


def test_specs_parse_kinds_presets_and_scaled_presets() -> None:
    assert parse_perturb("none") == {} and parse_perturb("") == {}
    assert parse_perturb("pose_noise:2,action_latency:1") == {"pose_noise": 2.0, "action_latency": 1.0}
    real = load_presets()["realistic"]
    assert parse_perturb("realistic") == real and set(real) == set(KINDS)  # the preset covers every kind
    half = parse_perturb("realistic:0.5")
    assert half["pose_noise"] == pytest.approx(real["pose_noise"] / 2)
    assert half["pose_latency"] == 1.0  # whole steps: 0.5 x 2 steps
    assert parse_perturb("realistic,pose_noise:0")["pose_rot_noise"] == real["pose_rot_noise"]
    assert "pose_noise" not in parse_perturb("realistic,pose_noise:0")  # a later 0 drops a kind


@pytest.mark.parametrize("spec, match", [
    ("pose_nois:2", "did you mean 'pose_noise'"),
    ("pose_noise", "needs a severity in mm"),
    ("pose_noise:abc", "must be a number"),
    ("pose_noise:-1", ">= 0"),
    ("pose_dropout:2", "is a probability"),
    ("action_latency:1.5", "counts control steps"),
])
def test_bad_specs_name_what_is_wrong(spec: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_perturb(spec)


def test_pose_noise_and_bias_have_the_severity_in_millimetres() -> None:
    p = Perturber({"pose_noise": 2.0})
    errs = []
    for seed in range(200):
        p.reset(seed)
        errs.append(p.poses(POSE)[:, :3] - POSE[:, :3])
    assert np.std(np.concatenate(errs)) == pytest.approx(0.002, rel=0.1)
    b = Perturber({"pose_bias": 5.0})
    b.reset(7)
    first, second = b.poses(POSE)[:, :3] - POSE[:, :3], b.poses(POSE)[:, :3] - POSE[:, :3]
    np.testing.assert_allclose(first, second)  # one offset for the whole episode, every object alike
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 0.005)
    b.reset(8)
    assert not np.allclose(b.poses(POSE)[:, :3] - POSE[:, :3], first)  # a new episode, a new offset


def test_pose_rotation_noise_keeps_unit_quaternions_and_turns_by_the_severity() -> None:
    p = Perturber({"pose_rot_noise": 5.0})
    p.reset(0)
    angles = []
    for _ in range(300):
        q = p.poses(POSE)[:, 3:]
        np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0)
        angles.append(2 * np.degrees(np.arccos(np.clip(np.abs(q[:, 3]), 0, 1))))
    assert np.sqrt(np.mean(np.square(angles))) == pytest.approx(5.0, rel=0.15)


def test_latency_delivers_old_poses_and_dropout_repeats_the_last() -> None:
    p = Perturber({"pose_latency": 2})
    p.reset(0)
    frames = [POSE + i for i in range(5)]
    got = [p.poses(f)[0, 0] for f in frames]
    assert got == pytest.approx([POSE[0, 0], POSE[0, 0], POSE[0, 0], POSE[0, 0] + 1, POSE[0, 0] + 2])
    d = Perturber({"pose_dropout": 0.3})
    d.reset(1)
    got = [d.poses(POSE + i)[0, 0] - POSE[0, 0] for i in range(400)]
    repeats = np.mean([b == a for a, b in pairwise(got)])
    assert repeats == pytest.approx(0.3, abs=0.06)


def test_actions_arrive_late_scaled_noisy_and_sometimes_a_tick_late() -> None:
    p = Perturber({"action_latency": 2})
    p.reset(0)
    cmds = [np.full(7, 0.1 * (i + 1)) for i in range(4)]
    out = [p.action(c) for c in cmds]
    np.testing.assert_allclose(out[0][:6], 0.0)  # nothing has arrived: the arm holds
    assert out[0][6] == pytest.approx(0.1)  # with the gripper as first commanded
    np.testing.assert_allclose(out[2], cmds[0])
    np.testing.assert_allclose(out[3], cmds[1])
    g = Perturber({"action_gain": 0.1})
    g.reset(3)
    a = g.action(np.array([0.5, 0.5, 0.5, 0.1, 0.1, 0.1, 0.9]))
    assert a[6] == pytest.approx(0.9)  # the gripper is not scaled
    assert a[0] / 0.5 == pytest.approx(g.action_gain) and 0.9 <= g.action_gain <= 1.1
    j = Perturber({"rate_jitter": 0.5})
    j.reset(0)
    out = [j.action(np.full(7, i / 1000)) for i in range(200)]
    late = np.mean([np.array_equal(b, a) for a, b in pairwise(out)])
    assert late == pytest.approx(0.5, abs=0.1)
    assert np.all(np.abs(Perturber({"action_noise": 1.0}).action(np.ones(7))) <= 1.0)  # clipped to the limits


def test_images_lighting_colour_blur_noise() -> None:
    img = np.full((8, 8, 3), 100, np.uint8)
    p = Perturber({"lighting": 0.2})
    p.reset(4)
    out = p.images({"agentview": img})["agentview"]
    assert out.dtype == np.uint8 and np.all(out == np.uint8(round(100 * p.light_gain)))
    n = Perturber({"pixel_noise": 8.0})
    n.reset(0)
    assert np.std(n.images({"a": img})["a"].astype(float)) == pytest.approx(8.0, rel=0.15)
    edge = np.zeros((9, 9, 1))
    edge[:, 5:] = 1.0
    soft = blur_image(edge, 1.0)
    assert 0 < soft[4, 4, 0] < 0.5 < soft[4, 5, 0] < 1 and soft.sum() == pytest.approx(edge.sum(), rel=0.02)


def test_streams_are_paired_by_seed_whatever_else_runs() -> None:
    alone, beside = Perturber({"pose_noise": 2.0}), Perturber({"pose_noise": 2.0, "action_noise": 0.1})
    for p in (alone, beside):
        p.reset(11)
    beside.action(np.zeros(7))
    np.testing.assert_array_equal(alone.poses(POSE), beside.poses(POSE))


def test_quaternion_product_composes_rotations() -> None:
    z90 = np.array([0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4)])
    np.testing.assert_allclose(quat_mul_xyzw(z90, z90), [0, 0, 1, 0], atol=1e-12)


def test_randomized_severities_span_zero_to_the_limit_in_whole_steps_for_latencies() -> None:
    from vla.perturb import draw_severities

    rng = np.random.default_rng(0)
    draws = [draw_severities({"pose_noise": 2.0, "action_latency": 2.0}, rng) for _ in range(400)]
    noise = np.array([d["pose_noise"] for d in draws])
    lags = {d["action_latency"] for d in draws}
    assert noise.min() >= 0 and noise.max() <= 2 and 0.9 < noise.mean() < 1.1
    assert lags == {0.0, 1.0, 2.0}
    p = Perturber({"lighting": 0.5}, randomize=True)
    seen = set()
    for seed in range(5):
        p.reset(seed)
        seen.add(round(p.s("lighting"), 6))
        assert 0 <= p.s("lighting") <= 0.5 and abs(p.light_gain - 1) <= p.s("lighting") + 1e-12
    assert len(seen) == 5
    p.reset(3)
    again = p.s("lighting")
    p.reset(3)
    assert p.s("lighting") == again  # the same seed draws the same severity
    assert p.describe()["lighting"]["how"].startswith("drawn per episode")
