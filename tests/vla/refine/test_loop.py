"""A tiny refinement iteration on a real environment (native pick_place, state observations):
evaluate, collect with the scripted intervener, fit the critics, fine-tune, resume."""

import json
from pathlib import Path

import numpy as np
import pytest

from vla.config import load_config
from vla.data.store import EpisodeStore
from vla.refine.config import RefineConfig
from vla.refine.loop import RefineRun

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def config(tmp_path: Path, pretrained: tuple[Path, Path], method: str, *overrides: str) -> RefineConfig:
    ckpt, demos = pretrained
    return load_config(RefineConfig, "refine", "debug", list(overrides),
                       values={"method": method, "ckpt": str(ckpt), "demos": str(demos),
                               "out_dir": str(tmp_path / method), "horizon": 40, "episodes_per_iteration": 2})


@pytest.mark.parametrize("method", ["habc", "rac"])
def test_one_iteration_collects_flags_trains_and_records(tmp_path: Path, pretrained: tuple[Path, Path],
                                                         method: str) -> None:
    # A short sub-task timeout makes the simulated person take over within the 40-step horizon.
    cfg = config(tmp_path, pretrained, method, "intervener_args={subtask_timeout: 8}")
    run = RefineRun(cfg, progress=False)
    rows = run.run()
    assert [r["version"] for r in rows] == [0, 1]
    assert rows[1]["env_episodes"] == 2 and rows[0]["env_episodes"] == 0
    store = EpisodeStore.open(cfg.out_dir + "/store.zarr")
    table = store.table()
    rollouts = np.flatnonzero(table.source != "demo")
    assert len(rollouts) == 2 and set(table.seed[rollouts]) == set(run.collect_seeds(0))
    n = store.n_steps
    version = np.asarray(store.read("policy_version", 0, n))
    start = int(table.episode_starts[rollouts[0]])
    assert (version[start:] == 0).all()
    flags = np.asarray(store.read("is_intervention", 0, n))[start:]
    recovery = np.asarray(store.read("is_recovery", 0, n))[start:]
    assert not (recovery & ~flags).any()  # recovery steps are intervention steps
    assert rows[1]["intervention_steps"] == int(flags.sum()) > 0
    # why the person stepped in, counted over the round (none before version 1's round)
    assert rows[0]["takeover_reasons"] == {} and sum(rows[1]["takeover_reasons"].values()) >= 1
    if method == "rac":
        assert recovery.any()  # RaC rewinds before it corrects
    info = json.loads((Path(cfg.out_dir) / "iter_01" / "train_info.json").read_text())
    assert info["supervised_steps"] > 0 and np.isfinite(info["train_loss_last"])
    if method == "habc":
        assert "viability_loss" in info and "val_viability_auroc" in info and info["td_rounds"] >= 1
    assert info["demo_sample_share"] > 0 and "policy_weight_p50" in info  # the weights per group
    assert "steps_to_success" in rows[0]
    assert run.policy_path(1).is_dir() and (Path(cfg.out_dir) / "curves.png").exists()


def test_autonomous_habc_at_fixed_group_shares(tmp_path: Path, pretrained: tuple[Path, Path]) -> None:
    # HABC's online-RL setting: no intervener, only the episode outcome; samples 50/50 demos/policy
    # own_chunk_only: the policy's windows end with the chunk it executed
    cfg = config(tmp_path, pretrained, "habc", "intervener=", "intervener_args={subtask_timeout: 8}",
                 "method_args.group_shares={demo: 0.5, policy: 0.5}", "own_chunk_only=true")
    run = RefineRun(cfg, progress=False)
    rows = run.run()
    assert rows[1]["intervention_steps"] == 0 and rows[1]["env_episodes"] == 2
    info = json.loads((Path(cfg.out_dir) / "iter_01" / "train_info.json").read_text())
    assert info["correction_sample_share"] == 0
    assert np.isclose(info["demo_sample_share"], 0.5) and np.isclose(info["policy_sample_share"], 0.5)
    # method_args.sample_by_weight: the same critic's weights drawn by the sampler instead of the loss
    from vla.policy.checkpoint import load_model

    model, _ = load_model(run.policy_path(0), use_ema=True, device="cpu")
    on_loss, _ = run.method.weights(run, 0, model, [run.added(0)])
    run.method.args.sample_by_weight = True
    on_sampler, info = run.method.weights(run, 0, model, [run.added(0)])
    from vla.refine.weights import demo_loss

    _, demo = demo_loss(EpisodeStore.open(cfg.out_dir + "/store.zarr").table())
    policy = (on_loss.loss > 0) & ~demo  # the critic-weighted steps
    assert set(on_sampler.loss[policy].tolist()) == {1.0} and set(on_loss.loss[policy].tolist()) != {1.0}
    mass = on_loss.sample * on_loss.loss
    np.testing.assert_allclose(on_sampler.sample[policy], 0.5 * mass[policy] / mass[policy].sum(), rtol=1e-5)
    assert np.isclose(info["policy_sample_share"], 0.5)
    # method_args.outcome_gate: the policy's steps count only in runs that ended in a success, mean weight 1 there
    run.method.args.sample_by_weight, run.method.args.outcome_gate = False, True
    gated, info = run.method.weights(run, 0, model, [run.added(0)])
    table = EpisodeStore.open(cfg.out_dir + "/store.zarr").table()
    own = np.zeros(len(demo), bool)
    for e in np.flatnonzero(table.source != "demo"):
        own[table.episode_starts[e]:table.episode_ends[e]] = True
    won = np.zeros_like(own)
    for e in np.flatnonzero((table.source != "demo") & np.asarray(table.success, bool)):
        won[table.episode_starts[e]:table.episode_ends[e]] = True
    assert (on_loss.loss[own & ~won] > 0).any()  # ungated, the failed episodes' steps carry weight
    assert (gated.loss[own & ~won] == 0).all()
    if won.any():
        assert np.isclose(gated.loss[won].mean(), 1.0, rtol=1e-4)
    np.testing.assert_array_equal(gated.loss[demo], on_loss.loss[demo])
    assert 0.0 <= info["policy_effective_share"] <= 1.0


def test_dagger_trains_on_the_experts_labels_of_the_policys_steps(tmp_path: Path,
                                                                  pretrained: tuple[Path, Path]) -> None:
    cfg = config(tmp_path, pretrained, "dagger")
    RefineRun(cfg, progress=False).run()
    store = EpisodeStore.open(Path(cfg.out_dir) / "store.zarr")
    table = store.table()
    start = int(table.episode_starts[np.flatnonzero(table.source != "demo")[0]])
    action = np.asarray(store.read("action", start, store.n_steps))
    own = ~np.asarray(store.read("is_intervention", start, store.n_steps), bool)
    assert own.any()
    # the expert's labels, not the flow policy's continuous outputs: its gripper command is exactly +-1
    assert np.isin(action[own, -1], (-1.0, 1.0)).all()
    info = json.loads((Path(cfg.out_dir) / "iter_01" / "train_info.json").read_text())
    assert info["policy_supervised_steps"] == own.sum()  # every labelled step is trained on
    with pytest.raises(ValueError, match="method=dagger labels every step"):
        RefineRun(config(tmp_path, pretrained, "dagger", "intervener="))


def test_filtered_bc_collects_with_the_ensemble_and_evaluates_without(tmp_path: Path,
                                                                        pretrained: tuple[Path, Path]) -> None:
    # collect_temporal_ensemble: the rollouts run the ensemble, the evaluations the plain chunks
    cfg = config(tmp_path, pretrained, "filtered_bc", "intervener=", "collect_temporal_ensemble=0.3")
    RefineRun(cfg, progress=False).run()
    out = Path(cfg.out_dir)
    assert json.loads((out / "iter_00/collect/summary.json").read_text())["config"]["temporal_ensemble"] == 0.3
    for version in (0, 1):
        assert json.loads((out / f"iter_{version:02d}/eval/summary.json").read_text())["config"][
            "temporal_ensemble"] is None
    with pytest.raises(ValueError, match="collect_temporal_ensemble must be a finite rate"):
        RefineRun(config(tmp_path, pretrained, "filtered_bc", "collect_temporal_ensemble=.inf"))


def test_rollouts_under_randomised_actuator_errors_record_the_commands(tmp_path: Path,
                                                                        pretrained: tuple[Path, Path]) -> None:
    # collect_randomize: the rollouts run under a real arm's actuator errors, the evaluations clean; the store
    # keeps what was commanded (the person's gripper command is exactly +-1), not what the noisy arm executed
    cfg = config(tmp_path, pretrained, "hg_dagger", "intervener_args={subtask_timeout: 8}",
                 "collect_randomize=action_noise:0.5")
    RefineRun(cfg, progress=False).run()
    out = Path(cfg.out_dir)
    collect = json.loads((out / "iter_00/collect/summary.json").read_text())
    assert collect["config"]["randomize"] == "action_noise:0.5"
    assert collect["randomize"]["randomized"] == {"action_noise": 0.5}
    for version in (0, 1):
        assert json.loads((out / f"iter_{version:02d}/eval/summary.json").read_text())["config"][
            "randomize"] == "none"
    store = EpisodeStore.open(out / "store.zarr")
    table = store.table()
    start = int(table.episode_starts[np.flatnonzero(table.source != "demo")[0]])
    action = np.asarray(store.read("action", start, store.n_steps))
    person = np.asarray(store.read("is_intervention", start, store.n_steps), bool)
    assert person.any() and np.isin(action[person, -1], (-1.0, 1.0)).all()
    with pytest.raises(ValueError, match="collect_randomize: perturb: unknown perturbation or preset 'action_nois'"):
        RefineRun(config(tmp_path, pretrained, "hg_dagger", "collect_randomize=action_nois:0.1"))
    # the rollouts would take both: refused before anything runs, not at the first collection
    with pytest.raises(ValueError, match=r"collect_randomize: perturb \(action_gain:0.1\) and randomize"):
        RefineRun(config(tmp_path, pretrained, "hg_dagger", "perturb=action_gain:0.1",
                         "collect_randomize=action_noise:0.1"))


def test_resume_skips_finished_work_and_continues(tmp_path: Path, pretrained: tuple[Path, Path]) -> None:
    cfg = config(tmp_path, pretrained, "hg_dagger")
    RefineRun(cfg, progress=False).run()
    summary = Path(cfg.out_dir) / "iter_00" / "eval" / "summary.json"
    stamp = summary.stat().st_mtime_ns
    longer = config(tmp_path, pretrained, "hg_dagger", "iterations=2")
    rows = RefineRun(longer, progress=False).run()
    assert summary.stat().st_mtime_ns == stamp  # version 0 was not evaluated again
    assert [r["version"] for r in rows] == [0, 1, 2] and rows[2]["env_episodes"] == 4
    table = EpisodeStore.open(Path(cfg.out_dir) / "store.zarr").table()
    assert (table.source != "demo").sum() == 4  # no duplicate rollouts


def test_eval_every_measures_only_the_chosen_versions_and_the_last(tmp_path: Path,
                                                                     pretrained: tuple[Path, Path]) -> None:
    cfg = config(tmp_path, pretrained, "hg_dagger", "iterations=2", "eval_every=2")
    rows = RefineRun(cfg, progress=False).run()
    assert [r["version"] for r in rows] == [0, 2] and rows[1]["env_episodes"] == 4
    out = Path(cfg.out_dir)
    assert not (out / "iter_01" / "eval").exists() and (out / "iter_01" / "train_info.json").exists()
    with pytest.raises(ValueError, match="eval_every must be >= 1"):
        RefineRun(config(tmp_path, pretrained, "hg_dagger", "eval_every=0"))


def test_bad_config_is_named(tmp_path: Path, pretrained: tuple[Path, Path]) -> None:
    with pytest.raises(ValueError, match="unknown refinement method 'habcc'"):
        RefineRun(config(tmp_path, pretrained, "habcc"))
    with pytest.raises(ValueError, match=r"critic\.features"):
        RefineRun(config(tmp_path, pretrained, "habc", "critic.features=pixels"))
    with pytest.raises(ValueError, match="intervener must be"):
        RefineRun(config(tmp_path, pretrained, "habc", "intervener=rc"))
    with pytest.raises(ValueError, match=r"unknown group 'policies'.*did you mean 'policy'"):
        RefineRun(config(tmp_path, pretrained, "habc", "method_args.group_shares={policies: 1.0}"))
    with pytest.raises(ValueError, match=r"unknown key 'bta'.*did you mean 'beta'"):
        RefineRun(config(tmp_path, pretrained, "habc", "method_args.bta=2"))
    with pytest.raises(ValueError, match=r"'habc' is gone: .*method_args\.beta"):  # the old sections, named
        RefineRun(config(tmp_path, pretrained, "habc", "habc.beta=2"))
