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
    info = json.loads((run.out / "iter_00" / "imagination" / "weights.json").read_text())
    assert info["starts"] == 4 and info["rollouts"] == 12
    with EpisodeStore.open(run.store_path) as store:
        table = store.table()
        imagined = np.flatnonzero(table.source == "imagined")
        assert imagined.tolist() == info["episodes"] and (table.seed[imagined] == -1).all()
        assert (table.lengths[imagined] == 8).all()  # train_chunks=1 chunk of 8 actions each
        rollouts = (table.source != "demo") & (table.source != "imagined")
        assert not store.read("is_intervention", 0, store.n_steps).any() and rollouts.sum() == 2
    assert rows[1]["imagined_episodes"] == len(imagined)
    assert all(w > 0 for w in info["weights"])
    train_info = json.loads((run.out / "iter_01" / "train_info.json").read_text())
    assert train_info["imagined_episodes_supervised"] == len(imagined)
    # the world model was refitted on the real data (never on imagined episodes)
    wm_cfg = json.loads(next((run.out / "wm" / "checkpoints").glob("step_*/config.json")).read_text())
    assert wm_cfg["meta"]["episodes"] == 7 + 2
    # resume: nothing is redone
    mtime = (run.out / "iter_00" / "imagination" / "weights.json").stat().st_mtime
    assert RefineRun(cfg, progress=False).run() == rows
    assert (run.out / "iter_00" / "imagination" / "weights.json").stat().st_mtime == mtime


def test_bad_method_args_and_image_mode_are_clear_errors(tmp_path: Path, policy: Path, pick_place_store: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'sampels'.*did you mean 'samples'"):
        config(tmp_path, policy, pick_place_store, "method_args.sampels=4").validate()
    with pytest.raises(ValueError, match="obs_mode=state"):
        config(tmp_path, policy, pick_place_store, "obs_mode=image").validate()
    with pytest.raises(ValueError, match="samples must be >= 2"):
        config(tmp_path, policy, pick_place_store, "method_args.samples=1").validate()
    with pytest.raises(ValueError, match="needs real_weight > 0"):
        config(tmp_path, policy, pick_place_store, "method_args.imagine=false").validate()
