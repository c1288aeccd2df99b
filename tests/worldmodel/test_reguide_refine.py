"""A tiny ReGuide iteration in the real refinement loop: guided rollouts in the simulator recorded
with source=guided, successes absorbed with the demos, FT from the current version, FS from a
fresh model, the matched-data ablation without guidance, resume."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from vla.config import ConfigError, load_config
from vla.data.store import EpisodeStore
from vla.refine.config import RefineConfig
from vla.refine.loop import RefineRun

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def policy(pick_place_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.worldmodel.test_evaluate_rank import tiny_policy

    return tiny_policy(tmp_path_factory.mktemp("reguide_policy"), pick_place_store, 0)


def config(tmp_path: Path, policy: Path, store: Path, method: str = "reguide_ft", **margs: object) -> RefineConfig:
    return load_config(RefineConfig, "refine", "debug", ["horizon=30", "episodes_per_iteration=2"],
                       values={"method": method, "ckpt": str(policy), "demos": str(store),
                               "out_dir": str(tmp_path / "run"),
                               "method_args": {"wm_preset": "debug", "wm_steps": 4,
                                               "wm_overrides": ["model.probe_dims=[9,10,11]"],
                                               "phases": {"clusters": 6, "prototypes": 50}, **margs}})


def test_reguide_ft_iteration_guides_records_and_fine_tunes(tmp_path: Path, policy: Path,
                                                            pick_place_store: Path) -> None:
    # scale 5 and a band over every distance: guidance acts on every chunk of the tiny policy
    cfg = config(tmp_path, policy, pick_place_store, scale=5.0, phases={"clusters": 6, "prototypes": 50,
                                                                          "lower_pct": 0.0, "upper_pct": 100.0})
    run = RefineRun(cfg, progress=False)
    rows = run.run()
    assert [r["version"] for r in rows] == [0, 1] and rows[1]["env_episodes"] == 2
    assert (run.out / "reguide" / "phases" / "phases.json").is_file()  # world model trained, phases fitted
    with EpisodeStore.open(run.store_path) as store:
        table = store.table()
    assert (table.source == "guided").sum() == 2 and set(table.source.tolist()) == {"demo", "guided"}
    info = run.added(0).info
    assert info["guide"] and info["episodes"] == 2 and info["guided_steps"] > 0
    detail = json.loads((run.out / "iter_00" / "collect" / "summary.json").read_text())["episodes_detail"]
    assert sum(len(e["guided_steps"]) for e in detail) == info["guided_steps"]
    train = json.loads((run.out / "iter_01" / "train_info.json").read_text())
    demo_steps = int(table.lengths[table.source == "demo"].sum())  # every demo, as in pretraining
    absorbed = (table.source == "guided") & table.success
    assert train["absorbed_episodes"] == absorbed.sum()
    assert train["supervised_steps"] == demo_steps + int(table.lengths[absorbed].sum())
    mtime = run.added_file(0).stat().st_mtime
    assert RefineRun(cfg, progress=False).run() == rows  # resume redoes nothing
    assert run.added_file(0).stat().st_mtime == mtime


def test_matched_ablation_collects_unguided_and_fs_starts_from_scratch(tmp_path: Path, policy: Path,
                                                                      pick_place_store: Path) -> None:
    from worldmodel.reguide_refine import ReGuideFs

    matched = RefineRun(config(tmp_path / "m", policy, pick_place_store, guide=False), progress=False)
    matched.run()
    with EpisodeStore.open(matched.store_path) as store:
        assert set(store.table().source.tolist()) == {"demo", "rollout"}
    assert not (matched.out / "reguide").exists()  # no world model, no phases: nothing guided
    assert matched.added(0).info["guided_steps"] == 0

    cfg = config(tmp_path / "fs", policy, pick_place_store, method="reguide_fs", fs_steps=3)
    run = RefineRun(cfg, progress=False)
    from vla.policy.checkpoint import load_model

    current, _ = load_model(policy)
    # (the tiny policy is itself an untrained model initialised with seed 0: another seed here)
    fresh, train_cfg = ReGuideFs(cfg).setup_training(run, 0, current, replace(cfg.train, seed=5))
    assert train_cfg.steps == 3
    assert torch.equal(fresh.normalizer.action_scale, current.normalizer.action_scale)
    assert not all(torch.equal(a, b) for a, b in zip(fresh.parameters(), current.parameters(), strict=True))
    run.run()
    assert run.policy_path(1).name == "step_00000003"


def test_bad_method_args_are_clear_errors(tmp_path: Path, policy: Path, pick_place_store: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'scal'.*did you mean 'scale'"):
        config(tmp_path, policy, pick_place_store, scal=1.0).validate()
    with pytest.raises(ConfigError, match=r"method_args.phases.*unknown key 'phase'"):
        config(tmp_path, policy, pick_place_store, phases={"phase": 3}).validate()
    with pytest.raises(ValueError, match="fs_steps is for reguide-fs"):
        config(tmp_path, policy, pick_place_store, fs_steps=10).validate()
    with pytest.raises(ValueError, match="demo_share_mode must be fixed or floor"):
        config(tmp_path, policy, pick_place_store, demo_share_mode="proportional").validate()
    with pytest.raises(ValueError, match="demo_share must be in"):
        config(tmp_path, policy, pick_place_store, demo_share=1.5).validate()
    with pytest.raises(ValueError, match="dims must be a slice a:b"):
        config(tmp_path, policy, pick_place_store, dims="0-3").validate()
    with pytest.raises(ValueError, match="space must be one of latent, state"):
        config(tmp_path, policy, pick_place_store, phases={"space": "pixels"}).validate()
    assert np.isclose(config(tmp_path, policy, pick_place_store).method_args["wm_steps"], 4)
