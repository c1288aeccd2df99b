"""A tiny imagination-refinement iteration in the real loop: real rollouts, a world model refitted
on them, imagined rollouts into the store (source=imagined), advantage-weighted fine-tuning, resume."""

import json
from pathlib import Path

import numpy as np
import pytest

from vla.config import ConfigError, load_config
from vla.data.store import EpisodeStore
from vla.refine.config import RefineConfig
from vla.refine.loop import RefineRun

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def policy(pick_place_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.worldmodel.test_evaluate_rank import tiny_policy

    return tiny_policy(tmp_path_factory.mktemp("imagination_policy"), pick_place_store, 0)


def config(tmp_path: Path, policy: Path, store: Path, *overrides: str) -> RefineConfig:
    return load_config(RefineConfig, "refine", "debug",
                       ["obs_mode=state", "cameras=[]", "horizon=30", "episodes_per_iteration=2", *overrides],
                       values={"method": "imagination", "ckpt": str(policy), "demos": str(store),
                               "out_dir": str(tmp_path / "run"),
                               "method_args": {"wm_preset": "debug", "wm_steps": 4, "refit_steps": 2, "starts": 4,
                                               "samples": 3, "chunks": 2, "train_chunks": 1,
                                               "wm_overrides": ["model.probe_dims=[9,10,11]"]}})


def test_one_iteration_imagines_weights_and_trains(tmp_path: Path, policy: Path, pick_place_store: Path) -> None:
    cfg = config(tmp_path, policy, pick_place_store)
    run = RefineRun(cfg, progress=False)
    rows = run.run()
    assert [r["version"] for r in rows] == [0, 1] and rows[1]["env_episodes"] == 2
    added = run.added(0)
    info = added.info
    assert info["starts"] == 4 and info["rollouts"] == 12
    with EpisodeStore.open(run.store_path) as store:
        table = store.table()
        imagined = np.flatnonzero(table.source == "imagined")
        # an imagined episode carries the seed of the real rollout it started from
        assert imagined.tolist() == added.episodes and set(table.seed[imagined]) <= set(run.collect_seeds(0))
        assert (table.lengths[imagined] == 8).all()  # train_chunks=1 chunk of 8 actions each
        rollouts = table.source == "rollout"
        assert not store.read("is_intervention", 0, store.n_steps).any() and rollouts.sum() == 2
    assert rows[1]["added_episodes"] == len(imagined) and rows[1]["added_per_round"] == [len(imagined)]
    assert rows[0]["added_per_round"] == []
    assert all(w > 0 for w in added.weights)
    train_info = json.loads((run.out / "iter_01" / "train_info.json").read_text())
    assert train_info["imagined_episodes_supervised"] == len(imagined)
    # the world model was refitted on the real data (never on imagined episodes)
    wm_cfg = json.loads(next((run.out / "wm" / "checkpoints").glob("step_*/config.json")).read_text())
    assert wm_cfg["meta"]["episodes"] == 7 + 2
    # resume: nothing is redone
    mtime = run.added_file(0).stat().st_mtime
    assert RefineRun(cfg, progress=False).run() == rows
    assert run.added_file(0).stat().st_mtime == mtime


def test_bad_method_args_and_image_mode_are_clear_errors(tmp_path: Path, policy: Path, pick_place_store: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'sampels'.*did you mean 'samples'"):
        config(tmp_path, policy, pick_place_store, "method_args.sampels=4").validate()
    with pytest.raises(ValueError, match="chunks must be 1 for a policy that reads cameras"):
        config(tmp_path, policy, pick_place_store, "obs_mode=image").validate()
    # the equal-compute control imagines nothing: any obs_mode
    config(tmp_path, policy, pick_place_store, "obs_mode=image", "method_args.imagine=false",
           "method_args.real_weight=1").validate()
    with pytest.raises(ValueError, match="oracle=true needs a state-only policy"):
        config(tmp_path, policy, pick_place_store, "obs_mode=image", "method_args.chunks=1",
               "method_args.oracle=true").validate()
    with pytest.raises(ValueError, match="samples must be >= 2"):
        config(tmp_path, policy, pick_place_store, "method_args.samples=1").validate()
    with pytest.raises(ValueError, match="real_weight must be >= 0"):
        config(tmp_path, policy, pick_place_store, "method_args.real_weight=-1").validate()


@pytest.fixture(scope="module")
def quiet_policy(pick_place_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny state policy that deploys noise-free (policy.noise_scale=0, as the main job's checkpoints do)."""
    import torch

    from vla.policy.checkpoint import save_checkpoint
    from vla.policy.config import PolicyConfig
    from vla.policy.model import VLAModel

    s = EpisodeStore.open(pick_place_store)
    stats = s.stats(keys=["state", "action"])
    cfg = load_config(PolicyConfig, "policy", "tiny", ["d_model=32", "n_heads=2", "trunk_layers=1", "expert_layers=1",
                                                       "noise_scale=0"],
                      values={"cameras": [], "state_dim": s.schema.state_dim, "action_dim": 7})
    torch.manual_seed(0)
    return save_checkpoint(tmp_path_factory.mktemp("quiet") / "policy", VLAModel(cfg, stats), stats)


def test_a_noise_free_checkpoint_is_sampled_with_noise(tmp_path: Path, quiet_policy: Path,
                                                       pick_place_store: Path) -> None:
    """K chunks of a noise-free checkpoint are one chunk K times: no start could be ranked and nothing was
    supervised. The K samples are drawn at sample_noise (0.3) instead, so they differ and so do their scores."""
    run = RefineRun(config(tmp_path / "a", quiet_policy, pick_place_store), progress=False)
    run.run()
    info = run.added(0).info
    assert info["sample_noise"] == 0.3 and info["score_std_within_start_median"] > 0
    assert info["starts_under_min_std"] <= info["starts"]
    # the checkpoint's own noise (null) is refused in one line, not run to supervise nothing
    cfg = config(tmp_path / "b", quiet_policy, pick_place_store)
    cfg.method_args["sample_noise"] = None
    with pytest.raises(ValueError, match=r"choosing among 3 chunks needs sampling noise.*noise_scale is 0"):
        RefineRun(cfg, progress=False).run()
    with pytest.raises(ValueError, match="sample_noise must be > 0"):
        config(tmp_path / "c", quiet_policy, pick_place_store, "method_args.sample_noise=0").validate()


def test_the_deployed_baseline_supervises_only_samples_that_beat_the_policys_own_chunk(
        tmp_path: Path, quiet_policy: Path, pick_place_store: Path) -> None:
    """baseline=deployed: each start also rolls out the chunk the checkpoint deploys (noise-free here), and
    a sample is supervised only when its score beats that chunk's."""
    run = RefineRun(config(tmp_path / "a", quiet_policy, pick_place_store, "method_args.baseline=deployed"),
                    progress=False)
    run.run()
    added = run.added(0)
    info = added.info
    assert info["baseline"] == "deployed" and 0 <= info["deployed_score_mean"] <= 1.5
    assert info["supervised_rollouts"] == len(added.episodes) <= info["samples_above_deployed"] <= info["rollouts"]
    assert all(w > 0 for w in added.weights)
    with pytest.raises(ValueError, match="baseline must be 'group' or 'deployed'"):
        config(tmp_path / "b", quiet_policy, pick_place_store, "method_args.baseline=mean").validate()


@pytest.mark.parametrize("real_weight", [0.0, 1.0])
def test_controls_train_on_the_demos_alone_or_with_the_rollouts(tmp_path: Path, policy: Path, pick_place_store: Path,
                                                                real_weight: float) -> None:
    """imagine=false: no world model; real_weight=0 is the demos-only control, 1 the own-rollouts control."""
    cfg = config(tmp_path, policy, pick_place_store, "method_args.imagine=false",
                 f"method_args.real_weight={real_weight}")
    run = RefineRun(cfg, progress=False)
    rows = run.run()
    assert rows[1]["env_episodes"] == 2 and rows[1]["added_per_round"] == [0]
    assert not (run.out / "wm").exists()
    with EpisodeStore.open(run.store_path) as store:
        table = store.table()
    lengths = np.asarray(table.lengths)
    demo_steps = int(lengths[table.source == "demo"].sum())
    rollout_steps = int(lengths[table.source == "rollout"].sum())
    assert demo_steps > 0 and rollout_steps > 0
    info = json.loads((run.out / "iter_01" / "train_info.json").read_text())
    assert info["imagined_episodes_supervised"] == 0
    assert info["supervised_steps"] == demo_steps + (rollout_steps if real_weight else 0)


@pytest.fixture(scope="module")
def camera_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real image-mode store (9-d proprio + agentview and wrist frames): expert successes and failures."""
    from sim.evaluate import EvalConfig, run_evaluation

    path = tmp_path_factory.mktemp("imagination_cams") / "cams.zarr"
    for n, seed, horizon, noise, skill in ((3, 0, 80, 0.0, 1.0), (2, 100, 30, 0.5, 0.2)):
        run_evaluation(EvalConfig(task="pick_place", policy="expert", episodes=n, seed_range="collect",
                                  seed_offset=seed, workers=1,
                                  videos=0, image_size=32, horizon=horizon, noise=noise, skill=skill,
                                  record=str(path), source="demo", out_dir=str(path.parent / f"eval{seed}")),
                       progress=False)
    return path


@pytest.fixture(scope="module")
def camera_policy(camera_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch

    from vla.policy.checkpoint import save_checkpoint
    from vla.policy.config import PolicyConfig
    from vla.policy.model import VLAModel

    s = EpisodeStore.open(camera_store)
    stats = s.stats()
    cfg = load_config(PolicyConfig, "policy", "tiny", ["d_model=32", "n_heads=2", "trunk_layers=1", "expert_layers=1",
                                                       "image_size=[32,32]", "vision_channels=[8,8,8]"],
                      values={"cameras": ["agentview", "robot0_eye_in_hand"], "state_dim": s.schema.state_dim,
                              "action_dim": 7})
    torch.manual_seed(0)
    return save_checkpoint(tmp_path_factory.mktemp("cam_policy") / "policy", VLAModel(cfg, stats), stats)


def test_an_image_policy_is_scored_one_chunk_ahead_from_real_frames(tmp_path: Path, camera_policy: Path,
                                                                     camera_store: Path) -> None:
    cfg = load_config(RefineConfig, "refine", "debug",
                      ["obs_mode=image", "cameras=[agentview,robot0_eye_in_hand]", "image_size=32", "horizon=30",
                       "episodes_per_iteration=2"],
                      values={"method": "imagination", "ckpt": str(camera_policy), "demos": str(camera_store),
                              "out_dir": str(tmp_path / "run"),
                              "method_args": {"wm_steps": 4, "refit_steps": 0, "starts": 4, "samples": 3,
                                              "chunks": 1, "min_std": 0.0, "wm_overrides": [
                                                  "model.image_size=32", "model.latent_dim=32", "model.hidden=32",
                                                  "model.ensemble=2", "model.horizon=2", "train.batch_size=8"]}})
    from worldmodel.imagination_refine import Imagination

    assert Imagination(cfg).args.wm_preset == "cameras"  # the world model sees a camera in image mode
    run = RefineRun(cfg, progress=False)
    rows = run.run()
    assert [r["version"] for r in rows] == [0, 1]
    wm_cfg = json.loads(next((run.out / "wm" / "checkpoints").glob("step_*/config.json")).read_text())
    assert wm_cfg["model"]["cameras"] == ["agentview"]
    added = run.added(0)
    assert added.info["rollouts"] == 12 and added.first_window_only and added.episodes
    with EpisodeStore.open(run.store_path) as store:
        table = store.table()
        assert np.flatnonzero(table.source == "imagined").tolist() == added.episodes
        for e in added.episodes:
            start, end = store.episode_bounds(e)
            assert end - start == 8  # one chunk of the world model
            frames = store.read("images/agentview", start, end)
            # every step holds the start frame, which is a real recorded frame of a rollout of version 0
            assert (frames == frames[:1]).all()
            real = np.flatnonzero(table.source == "rollout")
            found = False
            for r in real:
                rs, re_ = store.episode_bounds(int(r))
                found |= bool((store.read("images/agentview", rs, re_) == frames[0]).all(axis=(1, 2, 3)).any())
            assert found
    # only each imagined episode's first window is supervised
    weights, _ = run.method.weights(run, 0, None, [added])
    for e, w in zip(added.episodes, added.weights, strict=True):
        start = int(table.episode_starts[e])
        assert weights.loss[start] == pytest.approx(w) and not weights.loss[start + 1:start + 8].any()
