"""The imagined environment over a trained (tiny) model, started from real recorded states."""

from pathlib import Path

import numpy as np
import pytest

from sim.policies import RandomPolicy
from vla.data.store import EpisodeStore
from worldmodel.checkpoint import load_checkpoint
from worldmodel.data import WorldModelDataError
from worldmodel.imagined_env import ImaginedEnv, check_policy, rollout, start_states, write_imagined

pytestmark = pytest.mark.slow


def test_batched_steps_report_success_disagreement_and_the_predicted_state(trained_wm: Path,
                                                                            pick_place_store: Path) -> None:
    model = load_checkpoint(trained_wm)[0]
    starts = start_states(pick_place_store, model, keyframe=0.5, task="pick_place")
    assert len(starts) == 7 and (starts.step > 0).all()
    env = ImaginedEnv(model, max_chunks=3)
    obs, info = env.reset(starts.repeat(2))
    assert len(obs) == 14 and obs[0]["state"].shape == (22,) and obs[0]["images"] == {}
    np.testing.assert_array_equal(obs[0]["state"], starts.state[0])  # starts exactly at the real state
    chunks = np.random.default_rng(0).uniform(-1, 1, (14, 8, 7)).astype(np.float32)
    obs, reward, _, _, info = env.step(chunks)
    assert reward.shape == (14,) and ((reward >= 0) & (reward <= 1)).all()
    assert (info["disagreement"] > 0).all()  # members start together and diverge
    assert not np.array_equal(obs[0]["state"], starts.state[0])
    with pytest.raises(ValueError, match=r"chunks must have shape \(14, 8, 7\)"):
        env.step(chunks[:, :4])
    with pytest.raises(ValueError, match="NaN"):
        env.step(np.full((14, 8, 7), np.nan, np.float32))


def test_rollouts_go_to_the_store_as_imagined_episodes(trained_wm: Path, pick_place_store: Path,
                                                       tmp_path: Path) -> None:
    model = load_checkpoint(trained_wm)[0]
    starts = start_states(pick_place_store, model, episodes=np.arange(3))
    policy = RandomPolicy(7, horizon=16, seed=0)
    res = rollout(ImaginedEnv(model, max_chunks=4), policy, starts, 4)
    assert res["actions"].shape[1:] == (4, 8, 7) and res["states"].shape == (3, 5, 22)
    n = write_imagined(tmp_path / "imagined.zarr", starts, res, "pick_place", 8)
    with EpisodeStore.open(tmp_path / "imagined.zarr") as store:
        table = store.table()
        assert n == [0, 1, 2] and set(table.source) == {"imagined"} and (table.lengths == 32).all()
    with pytest.raises(WorldModelDataError, match=r"has camera 'agentview' and imagined episodes have no images"):
        cam_store = tmp_path / "cams.zarr"
        from vla.data.synthetic import default_schema

        EpisodeStore.create(cam_store, default_schema(image_size=8, state_dim=22)).close()
        write_imagined(cam_store, starts, res, "pick_place", 8)


def test_bad_starts_and_policies_are_named(trained_wm: Path, pick_place_store: Path) -> None:
    model = load_checkpoint(trained_wm)[0]
    with pytest.raises(WorldModelDataError, match=r"start states of task 'pick_place'.*trained on 'stack3'"):
        start_states(pick_place_store, model, task="stack3")
    with pytest.raises(WorldModelDataError, match="has 7 episodes"):
        start_states(pick_place_store, model, episodes=np.array([50]))

    class ImagePolicy:
        class cfg:
            cameras = ("agentview",)
            state_dim, action_dim = 22, 7

    with pytest.raises(WorldModelDataError, match="needs images of cameras"):
        check_policy(ImagePolicy(), model)
    ImagePolicy.cfg.cameras, ImagePolicy.cfg.action_dim = (), 8
    with pytest.raises(WorldModelDataError, match="action_dim is 8, the world model's is 7"):
        check_policy(ImagePolicy(), model)
