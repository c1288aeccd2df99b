import numpy as np
import pytest

from sim.tasks.native.pick_place import PickPlaceEnv
from vla.registry import TASKS


@pytest.fixture(scope="module")
def env():
    e = TASKS.make("pick_place")
    yield e
    e.close()


def test_registered_with_the_other_native_task():
    assert {"pick_place", "stack3"} <= set(TASKS.names())


def test_image_observation_matches_the_interface(env):
    obs, info = env.reset(seed=0)
    assert set(obs["images"]) == {"agentview", "robot0_eye_in_hand"}
    for img in obs["images"].values():
        assert img.shape == (84, 84, 3) and img.dtype == np.uint8
        assert img.std() > 5  # a real rendering, not a blank buffer
    assert not np.array_equal(obs["images"]["agentview"], obs["images"]["robot0_eye_in_hand"])
    assert obs["state"].shape == (9,) and obs["state"].dtype == np.float32
    assert obs["instruction"] in PickPlaceEnv.INSTRUCTIONS
    assert info == {"success": False, "subtask": "pick_cube", "subtasks_done": [], "step": 0}
    obs2, *_ = env.step(np.zeros(7, np.float32))
    assert obs2["timestamp"] == pytest.approx(obs["timestamp"] + 0.05)


def test_state_mode_and_state_only():
    e = TASKS.make("pick_place", cameras=(), obs_mode="state")
    obs, _ = e.reset(seed=0)
    assert obs["images"] == {}
    assert obs["state"].shape == (22,) and e.state_dim == 22
    # Object features: the cube's position (after the 9 proprio values) is on the table.
    assert obs["state"][11] == pytest.approx(0.02, abs=1e-3)


def test_object_features_come_from_the_poses_a_pose_estimator_reports():
    """A robot's state (the policy node) is built from the published poses by `features_from_poses`: on a
    moving arm carrying nothing and a cube knocked about, it is the simulator's state to the float."""
    from sim.tasks.native import env_class
    from vla.robot.rotations import quat_wxyz_to_xyzw

    e = TASKS.make("pick_place", cameras=(), obs_mode="state").unwrapped
    e.reset(seed=4)
    rng = np.random.default_rng(0)
    for _ in range(12):
        obs, *_ = e.step(rng.uniform(-1, 1, 7).astype(np.float32))
        poses = e.object_poses()
        assert poses.shape == (2, 7) and np.allclose(np.linalg.norm(poses[:, 3:], axis=1), 1.0)
        np.testing.assert_array_equal(poses[0, :3], e.cube_pos())
        np.testing.assert_array_equal(poses[0, 3:], quat_wxyz_to_xyzw(e.data.xquat[e._cube_body]))
        np.testing.assert_array_equal(poses[1, :3], e.zone_pos())
        feats = env_class("pick_place").features_from_poses(poses, e.eef_pos())
        np.testing.assert_array_equal(feats.astype(np.float32), obs["state"][9:])
    assert env_class("pick_place").OBJECT_POSES == ("cube", "zone")
    with pytest.raises(ValueError, match=r"not a native MuJoCo task.*pick_place"):
        env_class("lift")


def test_unknown_or_repeated_camera_raises():
    with pytest.raises(ValueError, match="repeat"):
        TASKS.make("pick_place", cameras=("agentview", "agentview"))
    with pytest.raises(ValueError, match=r"unknown camera 'wristcam'.*agentview.*robot0_eye_in_hand"):
        TASKS.make("pick_place", cameras=("wristcam",))


def test_bad_obs_mode_and_reset_option():
    with pytest.raises(ValueError, match="obs_mode"):
        TASKS.make("pick_place", obs_mode="pixels")
    e = TASKS.make("pick_place", cameras=())
    with pytest.raises(ValueError, match="reset option 'instuction'"):
        e.reset(seed=0, options={"instuction": "x"})


def test_bad_actions_raise(env):
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(7,\).*\(6,\)"):
        env.step(np.zeros(6))
    bad = np.zeros(7)
    bad[4] = np.nan
    with pytest.raises(ValueError, match="NaN or inf at index 4"):
        env.step(bad)


def test_instruction_by_seed_and_override(env):
    seen = {env.reset(seed=s)[0]["instruction"] for s in range(12)}
    assert len(seen) > 1
    obs, _ = env.reset(seed=0, options={"instruction": "do the thing"})
    assert obs["instruction"] == "do the thing"


def test_deterministic_given_seed_and_randomised_across_seeds():
    e = TASKS.make("pick_place", cameras=("agentview",), obs_mode="state")
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, size=(15, 7)).astype(np.float32)

    def run(seed):
        obs, _ = e.reset(seed=seed)
        states, imgs = [obs["state"]], [obs["images"]["agentview"]]
        for a in actions:
            obs, *_ = e.step(a)
            states.append(obs["state"])
            imgs.append(obs["images"]["agentview"])
        return np.array(states), np.array(imgs)

    s1, i1 = run(3)
    s2, i2 = run(3)
    np.testing.assert_array_equal(s1, s2)
    np.testing.assert_array_equal(i1, i2)
    s3, _ = run(4)
    assert np.linalg.norm(s1[0, 9:12] - s3[0, 9:12]) > 1e-3  # cube start differs


def test_delta_actions_move_the_end_effector(env):
    env.reset(seed=0)
    start = env.eef_pos()
    for _ in range(5):
        env.step(np.array([1, 0, 0, 0, 0, 0, -1], np.float32))
    moved = env.eef_pos() - start
    assert moved[0] > 0.05 and abs(moved[1]) < 0.02 and abs(moved[2]) < 0.02
    for _ in range(5):
        env.step(np.array([0, 0, 0, 0, 0, 0, 1], np.float32))
    assert env.gripper_opening() < 0.01  # closed on nothing


def test_horizon_truncates():
    e = TASKS.make("pick_place", cameras=(), horizon=3)
    e.reset(seed=0)
    flags = [e.step(np.zeros(7))[3] for _ in range(3)]
    assert flags == [False, False, True]


def test_render_returns_the_first_camera(env):
    obs, _ = env.reset(seed=1)
    np.testing.assert_array_equal(env.render(), obs["images"]["agentview"])


def test_gymnasium_vector_env_batches_observations():
    import gymnasium as gym

    vec = gym.vector.SyncVectorEnv([lambda: TASKS.make("pick_place", cameras=("agentview",))] * 2)
    obs, _ = vec.reset(seed=[0, 1])
    assert obs["state"].shape == (2, 9) and obs["images"]["agentview"].shape == (2, 84, 84, 3)
    assert len(obs["instruction"]) == 2
    obs, reward, term, trunc, info = vec.step(np.zeros((2, 7), np.float32))
    assert not term.any() and not trunc.any() and (reward == 0).all()
    np.testing.assert_allclose(obs["timestamp"], [0.05, 0.05])
    assert list(info["subtask"]) == ["pick_cube", "pick_cube"]
    vec.close()


def test_square_variant_keeps_the_positions_and_narrows_the_yaw():
    plain = TASKS.make("pick_place", cameras=(), obs_mode="state")
    square = TASKS.make("pick_place_square", cameras=(), obs_mode="state")
    yaws_plain, yaws_square = [], []
    for seed in range(30):
        plain.reset(seed=seed)
        square.reset(seed=seed)
        assert square.TASK == "pick_place_square"
        np.testing.assert_allclose(square.cube_pos()[:2], plain.cube_pos()[:2], atol=1e-6)
        np.testing.assert_allclose(square.zone_pos(), plain.zone_pos(), atol=1e-9)
        for env, out in ((plain, yaws_plain), (square, yaws_square)):
            w, _, _, z = env.data.xquat[env._cube_body]
            out.append(abs(np.degrees(2 * np.arctan2(z, w))))
    assert max(yaws_square) <= 5.0 + 1e-6
    assert max(yaws_plain) > 30.0  # the plain task's cubes do start turned
