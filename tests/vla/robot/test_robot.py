"""vla/robot: the arm's conventions, rotations and object features both the simulator and a real arm use."""

import numpy as np
import pytest

from vla.robot.arm import FINGER_MAX, POS_SCALE, build_model, gripper_target, rewind_step
from vla.robot.objects import object_feature_count, pose_features
from vla.robot.rotations import quat_wxyz_to_xyzw, quat_xyzw_to_mat, rotvec


def test_rotations_agree() -> None:
    angle, axis = 0.7, np.array([0.0, 0.6, 0.8])
    wxyz = np.array([np.cos(angle / 2), *(np.sin(angle / 2) * axis)])
    mat = quat_xyzw_to_mat(quat_wxyz_to_xyzw(wxyz))
    np.testing.assert_allclose(mat @ mat.T, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(rotvec(mat), angle * axis, atol=1e-9)
    np.testing.assert_allclose(rotvec(np.eye(3)), 0.0)


def test_gripper_and_the_arm_model() -> None:
    assert gripper_target(-1.0) == FINGER_MAX and gripper_target(1.0) == 0.0
    model = build_model("", "")
    assert model.nu > 0 and model.njnt >= 7  # the arm, without any task's bodies


def test_rewind_walks_the_path_back_and_stops() -> None:
    here, mat = np.zeros(3), np.eye(3)
    path = [(np.array([0.2 * POS_SCALE, 0.0, 0.0]), mat), (np.array([0.5, 0.0, 0.0]), mat)]
    action = rewind_step(path, here, mat, gripper=1.0)
    assert len(path) == 1  # the first waypoint was within a step's reach: skipped
    assert action is not None and action[0] == 1.0 and action[-1] == 1.0 and np.all(action[1:6] == 0)
    assert rewind_step([(here + 0.001, mat)], here, mat, 1.0) is None  # the last waypoint reached


def test_object_features_of_a_task_and_a_clear_error_otherwise() -> None:
    names, features = pose_features("pick_place")
    assert names == ("cube", "zone") and object_feature_count("pick_place") == 13
    poses = np.array([[0.1, 0.2, 0.03, 0, 0, 0, 1], [0.3, -0.1, 0.0, 0, 0, 0, 1]])
    f = features(poses, np.array([0.1, 0.2, 0.13]))
    np.testing.assert_allclose(f[7:10], [0.0, 0.0, -0.1])  # cube - hand
    with pytest.raises(ValueError, match=r"'lift' has no object poses.*pick_place"):
        pose_features("lift")
