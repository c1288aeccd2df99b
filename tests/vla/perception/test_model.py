import numpy as np
import torch

from vla.perception.model import PoseNet, canonical_quat, position_error_mm, rotation_error_deg, target_scale, to_input


def test_canonical_quat_is_unit_with_nonnegative_w_and_keeps_the_rotation() -> None:
    poses = np.array([[1.0, 2.0, 3.0, 0.0, 0.0, 0.6, -0.8], [0, 0, 0, 0, 0, 0, 0]])
    out = canonical_quat(poses)
    np.testing.assert_allclose(out[0], [1, 2, 3, 0, 0, -0.6, 0.8])
    np.testing.assert_allclose(out[1, 3:], [0, 0, 0, 1])  # no rotation to normalise: the identity
    assert rotation_error_deg(poses[:1], out[:1])[0] < 1e-6  # q and -q are one rotation


def test_errors_are_in_millimetres_and_degrees() -> None:
    true = np.array([0.1, 0.2, 0.0, 0.0, 0.0, 0.0, 1.0])
    yaw = np.radians(10)
    pred = np.array([0.103, 0.204, 0.0, 0.0, 0.0, np.sin(yaw / 2), np.cos(yaw / 2)])
    assert abs(position_error_mm(pred, true) - 5.0) < 1e-9
    assert abs(rotation_error_deg(pred, true) - 10.0) < 1e-6


def test_target_scale_floors_a_constant_value() -> None:
    t = np.array([[0.0, 1.0], [0.0, 3.0]])
    mean, scale = target_scale(t, floor=0.01)
    np.testing.assert_allclose(mean, [0, 2])
    np.testing.assert_allclose(scale, [0.01, 1.0])  # a millimetre of the constant one is 0.1 units, not 1000


def test_posenet_maps_frames_of_every_camera_to_seven_values_per_object() -> None:
    net = PoseNet(["a", "b"], (4, 8), keypoints=3, hidden=16, n_objects=2)
    frames = {c: torch.randint(0, 256, (5, 20, 20, 3), dtype=torch.uint8) for c in "ab"}
    assert net(frames).shape == (5, 14)
    x = to_input(torch.tensor([[[[0, 255, 128]]]], dtype=torch.uint8))
    assert x.shape == (1, 3, 1, 1) and float(x.min()) == -1.0 and float(x.max()) == 1.0


def test_arm_features_are_the_same_for_q_and_minus_q() -> None:
    from vla.perception.model import arm_features

    q = np.array([0.01, 0.999, 0.0, 0.02])
    q /= np.linalg.norm(q)
    a, b = np.concatenate([[0.1, 0.2, 0.3], q, [0.04, -0.04]]), np.concatenate([[0.1, 0.2, 0.3], -q, [0.04, -0.04]])
    fa, fb = arm_features(np.stack([a, b]))
    assert fa.shape == (11,)
    np.testing.assert_allclose(fa, fb, atol=1e-12)
    np.testing.assert_allclose(fa[[0, 1, 2, 9, 10]], a[[0, 1, 2, 7, 8]])
