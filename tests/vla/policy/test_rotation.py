import mujoco
import numpy as np
import pytest
import torch

from vla.policy.rotation import check_state_quats, detect_quats, features_dim, quat_xyzw_to_rot6d, replace_quats


def unit_quats(n: int, seed: int = 0) -> np.ndarray:
    q = np.random.default_rng(seed).standard_normal((n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def test_rot6d_is_the_rotation_matrix_columns_and_sign_invariant() -> None:
    for q in unit_quats(20):
        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, np.array([q[3], q[0], q[1], q[2]]))  # MuJoCo is (w, x, y, z)
        r = mat.reshape(3, 3)
        want = np.concatenate([r[:, 0], r[:, 1]])
        got = quat_xyzw_to_rot6d(torch.tensor(q)).numpy()
        np.testing.assert_allclose(got, want, atol=1e-12)
        np.testing.assert_allclose(quat_xyzw_to_rot6d(torch.tensor(-q)).numpy(), want, atol=1e-12)


def test_rot6d_is_continuous_across_the_w_zero_boundary() -> None:
    """The downward-gripper pose: the w >= 0 convention jumps from (0, 1, 0, 0) to (0, -1, 0, 0)."""
    eps = 1e-5
    a = torch.tensor([0.0, 1.0, 0.0, eps])
    b = -torch.tensor([0.0, 1.0, 0.0, -eps])  # what w >= 0 stores just past the boundary
    assert (a - b).abs().max() > 1.9
    assert (quat_xyzw_to_rot6d(a) - quat_xyzw_to_rot6d(b)).abs().max() < 1e-4


def test_zero_and_unnormalised_quaternions() -> None:
    """A padded observation (zeros) stays finite; the scale of q does not matter."""
    assert torch.isfinite(quat_xyzw_to_rot6d(torch.zeros(2, 4))).all()
    q = torch.tensor(unit_quats(3))
    torch.testing.assert_close(quat_xyzw_to_rot6d(3 * q), quat_xyzw_to_rot6d(q))


def test_replace_quats_layout() -> None:
    raw = torch.arange(2 * 13, dtype=torch.float64).reshape(2, 13)
    raw[:, 3:7] = torch.tensor(unit_quats(2, 1))
    raw[:, 8:12] = torch.tensor(unit_quats(2, 2))
    normed = raw * 10
    out = replace_quats(raw, normed, (8, 3))
    assert out.shape == (2, features_dim(13, (3, 8))) == (2, 17)
    torch.testing.assert_close(out[:, :3], normed[:, :3])
    torch.testing.assert_close(out[:, 3:9], quat_xyzw_to_rot6d(raw[:, 3:7]))
    torch.testing.assert_close(out[:, 9:10], normed[:, 7:8])
    torch.testing.assert_close(out[:, 10:16], quat_xyzw_to_rot6d(raw[:, 8:12]))
    torch.testing.assert_close(out[:, 16:], normed[:, 12:])
    assert replace_quats(raw, normed, ()) is normed


def test_detect_quats() -> None:
    rng = np.random.default_rng(0)
    states = rng.uniform(-0.5, 0.5, (500, 15))
    states[:, 3:7] = unit_quats(500, 1)
    states[:, 9:13] = unit_quats(500, 2)
    assert detect_quats(states) == [3, 9]
    states[7, 9:13] *= 1.01  # one row off the unit sphere: not a quaternion
    assert detect_quats(states) == [3]
    assert detect_quats(np.zeros((0, 9))) == []
    assert detect_quats(rng.uniform(-1, 1, (100, 9))) == []


def test_check_state_quats_names_the_problem() -> None:
    check_state_quats((3,), 9)
    with pytest.raises(ValueError, match="state_dim is 9"):
        check_state_quats((6,), 9)
    with pytest.raises(ValueError, match="overlap"):
        check_state_quats((3, 5), 12)
    with pytest.raises(ValueError, match="index -1"):
        check_state_quats((-1,), 9)
