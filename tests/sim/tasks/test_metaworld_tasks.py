"""Meta-World tasks behind the Observation schema: registration, seeded resets, images from our
renderer, instructions, and the scripted experts solving real episodes."""

import importlib.util

import numpy as np
import pytest

from sim.policies import ExpertPolicy
from vla.registry import TASKS

pytestmark = pytest.mark.skipif(importlib.util.find_spec("metaworld") is None,
                                reason="metaworld is not installed (the Makefile installs it with --no-deps)")


def test_mt10_and_the_same_scene_pairs_are_registered() -> None:
    from sim.tasks.metaworld_tasks import MT10, SAME_SCENE, task_name

    names = set(TASKS.names())
    assert {task_name(t) for t in MT10} <= names
    assert {task_name(t) for pair in SAME_SCENE for t in pair} <= names
    with pytest.raises(KeyError, match="did you mean 'drawer-open'"):
        from sim.tasks.metaworld_tasks import MetaWorldTask

        MetaWorldTask("drawer-opn")


def test_seeded_resets_images_and_instructions() -> None:
    env = TASKS.make("mw_drawer_open", image_size=48)
    try:
        a, _ = env.reset(seed=3)
        b, _ = env.reset(seed=3)
        c, _ = env.reset(seed=4)
        assert np.array_equal(a["state"], b["state"]) and np.array_equal(a["images"]["corner2"], b["images"]["corner2"])
        assert a["state"].shape == (4,) and a["images"]["corner2"].shape == (48, 48, 3)
        assert a["images"]["corner2"].dtype == np.uint8 and a["images"]["corner2"].std() > 10
        assert a["instruction"] in env.unwrapped.INSTRUCTIONS
        assert env.unwrapped.raw_obs.shape == (39,)  # Meta-World's full state behind the proprio
        told, _ = env.reset(seed=3, options={"instruction": "close the drawer"})
        assert told["instruction"] == "close the drawer" and np.array_equal(told["state"], a["state"])
        assert not np.array_equal(c["images"]["corner2"], a["images"]["corner2"])  # another layout
        with pytest.raises(ValueError, match="unknown reset option 'goal'"):
            env.reset(seed=1, options={"goal": 1})
    finally:
        env.close()


def test_the_near_corner2_shows_the_layout_in_more_pixels() -> None:
    # Two seeds differ in reach's goal and object positions: from the MJCF's far pose they move a few
    # pixels, from the near pose (the default) several times as many.
    def changed(pos: tuple[float, float, float] | None) -> int:
        env = TASKS.make("mw_reach", image_size=84, corner2_pos=pos)
        try:
            a = env.reset(seed=3)[0]["images"]["corner2"].astype(int)
            b = env.reset(seed=4)[0]["images"]["corner2"].astype(int)
            return int((np.abs(a - b).sum(-1) > 30).sum())
        finally:
            env.close()

    near, far = changed((0.75, 0.075, 0.7)), changed(None)
    assert near > 2 * far > 0
    with pytest.raises(ValueError, match="corner2_pos must be 3 finite"):
        TASKS.make("mw_reach", corner2_pos=(0.7, float("nan"), 0.7))


def test_the_first_frame_shows_this_episodes_goal_not_the_last_ones() -> None:
    import mujoco

    env = TASKS.make("mw_reach", image_size=84)
    try:
        first = env.reset(seed=5)[0]["images"]["corner2"]
        env.reset(seed=6)
        again = env.reset(seed=5)[0]["images"]["corner2"]
        assert np.array_equal(first, again)  # the image does not depend on the episode before
        inner = env.unwrapped._env
        goal = inner.data.site_xpos[mujoco.mj_name2id(inner.model, mujoco.mjtObj.mjOBJ_SITE, "goal")]
        np.testing.assert_allclose(goal, env.unwrapped.raw_obs[36:39], atol=1e-6)  # drawn where it is
    finally:
        env.close()


@pytest.mark.parametrize("task", ["mw_drawer_open", "mw_window_close", "mw_reach"])
def test_the_scripted_expert_solves_it(task: str) -> None:
    env = TASKS.make(task, obs_mode="state", cameras=())
    try:
        for seed in (0, 1):
            obs, info = env.reset(seed=seed)
            assert obs["state"].shape == (39,)
            expert = ExpertPolicy(env, seed=seed)
            expert.reset(seed)
            for _ in range(300):
                expert.info = info
                obs, _, _, truncated, info = env.step(expert.sample_chunk([obs])[0][0])
                if info["success"] or truncated:
                    break
            assert info["success"], f"{task} seed {seed}"
    finally:
        env.close()
