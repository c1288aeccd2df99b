"""Evaluator and demo collection on real MuJoCo tasks in real worker subprocesses."""

import json
from pathlib import Path

import numpy as np
import pytest

from sim.evaluate import (
    EvalConfig,
    read_seed_outcomes,
    run_evaluation,
    seed_completions,
    seed_outcomes,
)
from vla.data.store import EpisodeStore
from vla.policy.policy import load_torch_policy
from vla.registry import TASKS


def test_trivial_policy_evaluation_records_rollouts(tmp_path: Path) -> None:
    config = EvalConfig(task="pick_place", policy="zero", episodes=3, workers=2, horizon=30, videos=1,
                        n_action_steps=4, out_dir=str(tmp_path / "eval"), record=str(tmp_path / "r.zarr"),
                        policy_version=3)
    summary = run_evaluation(config, progress=False)
    assert summary["episodes"] == 3 and summary["successes"] == 0
    # the default range is tune (vla.protocol): a plain `vla eval` never reports on seeds a choice can use
    assert summary["seeds"] == [1_000_000, 1_000_001, 1_000_002] and summary["seed_range"] == "tune"
    assert summary["wilson95"][0] == 0.0 and 0.4 < summary["wilson95"][1] < 0.8
    assert all(d["length"] == 30 for d in summary["episodes_detail"])
    written = json.loads((tmp_path / "eval" / "summary.json").read_text())
    assert written["success_rate"] == 0.0
    assert (tmp_path / "eval" / "summary.png").stat().st_size > 1000
    videos = list((tmp_path / "eval" / "videos").glob("*.mp4"))
    assert [v.name for v in videos] == ["pick_place_seed1000000.mp4"] and videos[0].stat().st_size > 1000
    store = EpisodeStore.open(tmp_path / "r.zarr")
    assert store.n_episodes == 3 and list(store.table().seed) == [1_000_000, 1_000_001, 1_000_002]
    assert set(store.table().source) == {"rollout"}
    ep = store.episode(1)
    assert len(ep) == 30 and (ep.steps["policy_version"] == 3).all()
    np.testing.assert_array_equal(ep.steps["action"][:, :6], 0.0)
    assert ep.steps["images/agentview"].shape == (30, 84, 84, 3)


@pytest.mark.slow
def test_expert_collection_is_reproducible(tmp_path: Path) -> None:
    runs = []
    for name in ("a", "b"):
        config = EvalConfig(task="pick_place", policy="expert", episodes=4, workers=2, videos=0, source="demo",
                            seed_range="collect", out_dir=str(tmp_path / name), record=str(tmp_path / f"{name}.zarr"))
        runs.append(run_evaluation(config, progress=False))
    assert runs[0]["successes"] >= 3  # the expert is >= 95% on this task
    a, b = (EpisodeStore.open(tmp_path / f"{n}.zarr") for n in ("a", "b"))
    assert set(a.table().source) == {"demo"}
    np.testing.assert_array_equal(a.read("action", 0, a.n_steps), b.read("action", 0, b.n_steps))


def test_an_episode_does_not_depend_on_the_worker_that_runs_it(tmp_path: Path) -> None:
    """A stochastic policy's noise restarts from each episode's seed: the same seeds give the same
    actions with one worker or two."""
    actions = []
    for workers in (1, 2):
        store = tmp_path / f"w{workers}.zarr"
        run_evaluation(EvalConfig(task="pick_place", policy="random", episodes=4, workers=workers, horizon=6,
                                  videos=0, cameras=[], obs_mode="state", out_dir=str(tmp_path / f"e{workers}"),
                                  record=str(store)), progress=False)
        s = EpisodeStore.open(store)
        order = np.argsort(s.table().seed)
        actions.append(np.stack([s.episode(int(i)).steps["action"] for i in order]))
    np.testing.assert_array_equal(actions[0], actions[1])
    assert not np.array_equal(actions[0][0], actions[0][1])  # episodes still differ from each other


def test_expert_options_reach_the_expert_in_the_worker(tmp_path: Path) -> None:
    """expert_turn_late travels from the config through the worker process: on the same seed the expert
    that turns over the object does not turn about the vertical on its first steps (still far from it), the
    default one turns at its cap from the first step."""
    rotation = {}
    for late in (False, True):
        store = tmp_path / f"late{late}.zarr"
        run_evaluation(EvalConfig(task="pick_place", policy="expert", episodes=1, workers=1, horizon=3, videos=0,
                                  seed_range="collect", cameras=[], obs_mode="state", expert_turn_late=late,
                                  expert_rot_speed=0.3, out_dir=str(tmp_path / f"e{late}"), record=str(store)),
                       progress=False)
        rotation[late] = np.abs(EpisodeStore.open(store).episode(0).steps["action"][:, 5]).max()
    assert rotation[True] < 0.01 and rotation[False] == pytest.approx(0.3)


def test_bad_task_and_config(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="did you mean 'pick_place'"):
        run_evaluation(EvalConfig(task="pick_plac", out_dir=str(tmp_path)))
    with pytest.raises(ValueError, match="episodes, workers"):
        run_evaluation(EvalConfig(episodes=0, out_dir=str(tmp_path)))
    with pytest.raises(ValueError, match=r"expert_rot_speed must be in \(0, 1\]"):
        run_evaluation(EvalConfig(policy="expert", expert_rot_speed=0.0, out_dir=str(tmp_path)))
    with pytest.raises(ValueError, match="expert_drop > 0 needs policy=expert and label=clean"):
        run_evaluation(EvalConfig(policy="expert", expert_drop=0.3, out_dir=str(tmp_path)))
    with pytest.raises(ValueError, match=r"expert_drop must be a probability"):
        run_evaluation(EvalConfig(policy="expert", label="clean", expert_drop=2.0, out_dir=str(tmp_path)))
    with pytest.raises(ValueError, match="expert_drift > 0 needs policy=expert and label=clean"):
        run_evaluation(EvalConfig(policy="expert", expert_drift=0.5, out_dir=str(tmp_path)))
    with pytest.raises(ValueError, match=r"expert_drift must be a probability"):
        run_evaluation(EvalConfig(policy="expert", label="clean", expert_drift=-0.1, out_dir=str(tmp_path)))
    with pytest.raises(ValueError, match="expert_rot_noise > 0 needs policy=expert and label=clean"):
        run_evaluation(EvalConfig(policy="expert", expert_rot_noise=0.02, out_dir=str(tmp_path)))
    with pytest.raises(ValueError, match=r"expert_rot_noise must be a fraction of full scale"):
        run_evaluation(EvalConfig(policy="expert", label="clean", expert_rot_noise=1.5, out_dir=str(tmp_path)))
    with pytest.raises(FileNotFoundError, match="neither a built-in"):  # in the parent, not "worker 0 failed"
        run_evaluation(EvalConfig(policy="no/such/ckpt", episodes=1, workers=1, out_dir=str(tmp_path)),
                       progress=False)


def test_seeds_come_from_a_named_range_and_stay_in_it(tmp_path: Path) -> None:
    from vla.config import ConfigError, load_config

    assert EvalConfig(seed_range="report", seed_offset=5, episodes=2).seed_list() == [2_000_005, 2_000_006]
    with pytest.raises(ValueError, match="unknown seed range 'held_out'"):
        run_evaluation(EvalConfig(seed_range="held_out", out_dir=str(tmp_path)))
    with pytest.raises(ValueError, match=r"seed range 'tune' holds offsets 0\.\.999999; 3 seeds from offset 999998"):
        run_evaluation(EvalConfig(episodes=3, seed_offset=999_998, out_dir=str(tmp_path)))
    with pytest.raises(ValueError, match=r"seeds: seed 1000 is not in the 'report' range.*lies in 'collect'"):
        run_evaluation(EvalConfig(seed_range="report", seeds=[1000], out_dir=str(tmp_path)))
    # an old command line's key says what replaced it
    with pytest.raises(ConfigError, match=r"'seed_start' is gone: .*seed_range=collect seed_offset=S"):
        load_config(EvalConfig, "eval", "default", ["seed_start=1000"])
    s = run_evaluation(EvalConfig(policy="zero", seed_range="report", episodes=1, workers=1, horizon=3, videos=0,
                                  out_dir=str(tmp_path / "r")), progress=False)
    assert s["seeds"] == [2_000_000] and s["seed_range"] == "report"


@pytest.mark.parametrize("mode", ["rac", "hg_dagger"])
def test_intervened_rollouts_are_flagged(tmp_path: Path, mode: str) -> None:
    """A policy that holds still times out in its sub-task; the scripted intervener takes over. RaC
    rewinds first (recovery steps) and ends the episode after the correction; HG-DAgger hands back."""
    # A random policy wanders off the plan: the intervener takes over, RaC rewinds first.
    config = EvalConfig(task="pick_place", policy="random", episodes=2, workers=1, horizon=200, videos=0,
                        out_dir=str(tmp_path / "eval"), record=str(tmp_path / "r.zarr"), intervener=mode)
    summary = run_evaluation(config, progress=False)
    assert summary["episodes_with_takeover"] == 2
    # why the person stepped in, per episode ("reason@step") and counted over the run
    reasons = [r for ep in summary["episodes_detail"] for r in ep["takeover_reasons"]]
    assert len(reasons) >= 2 and all(r.split("@")[1].isdigit() for r in reasons)
    assert sum(summary["takeover_reasons"].values()) == len(reasons)
    store = EpisodeStore.open(tmp_path / "r.zarr")
    assert store.n_episodes == 2 and list(store.select(intervention=True)) == [0, 1]
    for i in range(2):
        ep = store.episode(i, ["is_intervention", "is_recovery"])
        flags, recovery = ep.steps["is_intervention"], ep.steps["is_recovery"]
        assert not recovery[~flags].any()  # recovery steps are always intervention steps
        first = int(np.argmax(flags))
        assert first > 0 and not flags[:first].any()  # the policy acted first
        if mode == "rac":
            assert flags[first:].all()  # the episode ends with the intervention
            n_rec = int(recovery.sum())
            assert n_rec > 0 and recovery[first:first + n_rec].all()  # rewind first, then correction
            assert not recovery[first + n_rec:].any()
        else:
            assert not recovery.any()
    assert summary["intervention_steps"] > summary["recovery_steps"]


@pytest.mark.slow
def test_periodic_sim_evaluation_during_training(tmp_path: Path) -> None:
    from vla.train.pretrain import run_training

    run_evaluation(EvalConfig(task="pick_place", policy="expert", episodes=2, workers=1, videos=0, source="demo",
                              seed_range="collect", out_dir=str(tmp_path / "c"), record=str(tmp_path / "d.zarr")),
                   progress=False)
    result = run_training(tmp_path / "d.zarr", tmp_path / "train", "tiny", "debug",
                          ["train.steps=2", "train.eval_every=2", "train.batch_size=2", "data.val_fraction=0"],
                          eval_task="pick_place", eval_episodes=2)
    assert list(result.evals) == [2]
    assert 0.0 <= result.evals[2]["success_rate"] <= 1.0 and result.evals[2]["length_mean"] > 0
    assert (tmp_path / "train" / "eval" / "step_00000002" / "summary.json").exists()


def test_damaged_checkpoint_fails_in_the_parent_before_any_worker(tmp_path: Path) -> None:
    """A truncated model.safetensors was 'evaluation worker 0 failed' plus a traceback
    (or, with EMA weights present, silently evaluated the EMA weights)."""
    import subprocess
    import sys

    from tests.vla.policy.conftest import small_config
    from vla.policy.checkpoint import CheckpointError, save_checkpoint
    from vla.policy.model import VLAModel

    model = VLAModel(small_config((), state_dim=9, action_dim=7))
    ckpt = save_checkpoint(tmp_path / "ckpt", model, None, ema_state=dict(model.state_dict()))
    weights = ckpt / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    config = EvalConfig(task="pick_place", policy=str(ckpt), episodes=1, workers=1, horizon=5, videos=0,
                        out_dir=str(tmp_path / "eval"), obs_mode="state", cameras=[])
    with pytest.raises(CheckpointError, match=r"model\.safetensors"):
        run_evaluation(config, progress=False)
    res = subprocess.run([sys.executable, "-m", "vla.cli", "eval", str(ckpt), "episodes=1", "workers=1",
                          f"out_dir={tmp_path / 'eval2'}"], capture_output=True, text=True, timeout=300)
    errors = [line for line in res.stderr.splitlines() if not line.startswith("[robosuite")]  # import chatter
    assert res.returncode == 2 and len(errors) == 1 and errors[0].startswith("error: "), res.stderr
    assert "model.safetensors" in errors[0] and "worker" not in res.stderr


def test_time_to_success_is_over_the_successes_only() -> None:
    from sim.evaluate import EpisodeResult, time_to_success

    runs = [EpisodeResult(seed=0, success=True, length=40, reward=1.0),
            EpisodeResult(seed=1, success=False, length=200, reward=0.0),
            EpisodeResult(seed=2, success=True, length=60, reward=1.0)]
    assert time_to_success(runs) == {"steps_to_success": 50.0, "seconds_to_success": 2.5}  # 20 Hz control
    assert time_to_success(runs[1:2]) == {"steps_to_success": None, "seconds_to_success": None}
    fast = [EpisodeResult(seed=0, success=True, length=80, reward=1.0, control_hz=80.0)]  # Meta-World's rate
    assert time_to_success(fast)["seconds_to_success"] == 1.0


def test_an_instruction_override_changes_only_the_instruction(tmp_path: Path) -> None:
    # the language ablations: the same seeds, the same scenes, another instruction
    runs = {}
    for name, text in (("own", ""), ("other", "stack the blue block on the red one")):
        cfg = EvalConfig(task="pick_place", policy="zero", episodes=2, seed_range="collect", seed_offset=5, workers=1,
                         videos=0,
                         obs_mode="state", cameras=[], horizon=5, instruction=text,
                         record=str(tmp_path / f"{name}.zarr"), out_dir=str(tmp_path / name))
        run_evaluation(cfg, progress=False)
        runs[name] = EpisodeStore.open(tmp_path / f"{name}.zarr")
    own, other = runs["own"], runs["other"]
    assert set(other.table().instruction.tolist()) == {"stack the blue block on the red one"}
    assert "stack" not in " ".join(own.table().instruction.tolist())
    assert np.array_equal(own.read("state", 0, own.n_steps), other.read("state", 0, other.n_steps))
    with pytest.raises(ValueError, match="only whitespace"):
        EvalConfig(instruction="   ").validate()


def test_language_ablation_instructions_come_from_the_episodes_goal(tmp_path: Path) -> None:
    from sim.tasks.native.sort import GOALS, HELDOUT_TEMPLATES

    told = {}
    for kind in ("", "@wrong", "@heldout"):
        cfg = EvalConfig(task="sort", policy="zero", episodes=3, seed_range="collect", workers=1, videos=0,
                         obs_mode="state",
                         cameras=[], horizon=3, instruction=kind, record=str(tmp_path / f"{kind or 'own'}.zarr"),
                         out_dir=str(tmp_path / (kind or "own")))
        run_evaluation(cfg, progress=False)
        told[kind] = EpisodeStore.open(tmp_path / f"{kind or 'own'}.zarr").table().instruction.tolist()

    def goal_of(text: str) -> tuple[str, str]:
        return next(g for g in GOALS if f"{g[0]} " in text and f"{g[1]} " in text)

    for own, wrong, held in zip(told[""], told["@wrong"], told["@heldout"], strict=True):
        assert goal_of(wrong) != goal_of(own) and goal_of(held) == goal_of(own)
        assert any(held == t.format(cube=goal_of(own)[0], zone=goal_of(own)[1]) for t in HELDOUT_TEMPLATES)
    with pytest.raises(Exception, match="no same-scene alternatives"):
        run_evaluation(EvalConfig(task="pick_place", policy="zero", episodes=1, workers=1, videos=0,
                                  obs_mode="state", cameras=[], horizon=2, instruction="@wrong",
                                  out_dir=str(tmp_path / "bad")), progress=False)


def test_dart_demos_execute_the_noisy_action_and_record_the_clean_one(tmp_path: Path) -> None:
    def demo(name: str, **kw: object) -> np.ndarray:
        run_evaluation(EvalConfig(task="pick_place", policy="expert", episodes=1, workers=1, seed_range="collect",
                                  seed_offset=5,
                                  cameras=[], obs_mode="state", videos=0, horizon=12, source="demo",
                                  record=str(tmp_path / f"{name}.zarr"), out_dir=str(tmp_path / name), **kw),
                       progress=False)
        store = EpisodeStore.open(tmp_path / f"{name}.zarr")
        return store.read("action", 0, store.n_steps), store.read("state", 0, store.n_steps)

    (clean_a, clean_s), (dart_a, dart_s), (noisy_a, noisy_s) = (
        demo("clean"), demo("dart", noise=0.3, label="clean"), demo("noisy", noise=0.3))
    # the same first state: the DART label is the noiseless expert's action, the sloppy one is not
    assert np.array_equal(clean_s[0], dart_s[0]) and np.array_equal(clean_a[0], dart_a[0])
    assert not np.allclose(noisy_a[0], clean_a[0])
    # both noisy runs executed the same noisy actions, so they visit the same (drifted) states
    assert np.array_equal(dart_s, noisy_s) and not np.allclose(dart_s[1:], clean_s[1:])


def test_dagger_labels_record_the_experts_action_where_the_policy_acted(tmp_path: Path) -> None:
    """label=expert: the policy (here one that never moves) acts, the store holds the expert's
    action from each state it visited; without an intervener there is no expert to ask."""
    def record(name: str, **kw: object) -> np.ndarray:
        run_evaluation(EvalConfig(task="pick_place", episodes=1, workers=1, seed_range="collect", seed_offset=5,
                                  cameras=[],
                                  obs_mode="state", videos=0, horizon=6, record=str(tmp_path / f"{name}.zarr"),
                                  out_dir=str(tmp_path / name), **kw), progress=False)
        store = EpisodeStore.open(tmp_path / f"{name}.zarr")
        return store.read("action", 0, store.n_steps)

    expert = record("expert", policy="expert", source="demo")
    dagger = record("dagger", policy="zero", intervener="hg_dagger", label="expert")
    plain = record("plain", policy="zero", intervener="hg_dagger")
    assert not plain[:, :6].any()  # what the policy did: hold still
    np.testing.assert_array_equal(dagger[0], expert[0])  # the same first state, the expert's action
    assert (np.abs(dagger[:, :3]).max(axis=1) > 0.1).all()  # every step: move towards the cube
    with pytest.raises(ValueError, match="label=expert asks the intervener"):
        EvalConfig(policy="zero", label="expert").validate()


def test_clean_labels_are_the_experts_only() -> None:
    with pytest.raises(ValueError, match="label=clean labels the expert's steps"):
        EvalConfig(policy="zero", label="clean").validate()
    with pytest.raises(ValueError, match=r"unknown label 'claen'.*clean"):
        EvalConfig(policy="expert", label="claen").validate()


def test_seed_outcomes_read_back_what_summaries_store(tmp_path: Path) -> None:
    summary = {"episodes_detail": [{"seed": 7, "success": True}, {"seed": 3, "success": False}]}
    assert seed_outcomes(summary) == {7: True, 3: False}
    assert read_seed_outcomes(tmp_path) is None  # not evaluated yet
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    assert read_seed_outcomes(tmp_path) == {7: True, 3: False}


def test_seed_completions_give_the_steps_of_solved_seeds_only() -> None:
    summary = {"episodes_detail": [{"seed": 7, "success": True, "length": 42},
                                   {"seed": 3, "success": False, "length": 200}]}
    assert seed_completions(summary) == {7: 42, 3: None}


def test_noise_scale_override_reaches_the_checkpoint_policy(tmp_path: Path, tiny_ckpt: Path) -> None:
    def actions(scale: float | None) -> np.ndarray:
        store = tmp_path / f"{scale}.zarr"
        run_evaluation(EvalConfig(task="pick_place", policy=str(tiny_ckpt), episodes=1, seed_range="collect",
                                  seed_offset=3,
                                  workers=1, horizon=8, n_action_steps=4, cameras=["agentview"], videos=0,
                                  noise_scale=scale, record=str(store), out_dir=str(tmp_path / f"{scale}")),
                       progress=False)
        return EpisodeStore(store, "r").episode(0, keys=["action"]).steps["action"]

    # the same seed (scene and noise draws): only the scale of the noise differs, so the worker's policy
    # took the override; and scale 0 in the worker is the chunk from the prior's mean
    zero, own = actions(0.0), actions(None)
    assert zero.shape == own.shape and not np.allclose(zero, own)
    env = TASKS.make("pick_place", image_size=84, obs_mode="image", cameras=("agentview",), horizon=8)
    obs, _ = env.reset(seed=3)
    policy = load_torch_policy(tiny_ckpt, noise_scale=0.0)
    policy.reset(seed=3)
    np.testing.assert_allclose(policy.sample_chunk([obs])[0, :4], zero[:4], atol=1e-5)
    with pytest.raises(ValueError, match="noise_scale must be finite and >= 0"):
        EvalConfig(noise_scale=-1.0).validate()


def test_runtime_onnx_runs_the_checkpoints_export_made_once(tmp_path: Path, tiny_ckpt: Path) -> None:
    """runtime=onnx: the workers run the checkpoint's ONNX export (made in the parent, in CKPT/onnx, from the
    EMA weights torch evaluates), the same actions as torch for the same seed; a second evaluation reuses the
    export, a checkpoint saved after it makes it again; a wrapper spec and an unknown runtime are one line."""
    import os
    import shutil

    ckpt = Path(shutil.copytree(tiny_ckpt, tmp_path / "ckpt"))

    def actions(runtime: str) -> tuple[np.ndarray, dict]:
        store = tmp_path / f"{runtime}.zarr"
        shutil.rmtree(store, ignore_errors=True)
        summary = run_evaluation(EvalConfig(task="pick_place", policy=str(ckpt), episodes=1, seed_range="collect",
                                            seed_offset=3, workers=1, horizon=8, n_action_steps=4,
                                            cameras=["agentview"], videos=0, runtime=runtime, record=str(store),
                                            out_dir=str(tmp_path / runtime)), progress=False)
        return EpisodeStore(store, "r").episode(0, keys=["action"]).steps["action"], summary

    torch_actions, summary = actions("torch")
    assert "onnx_export" not in summary and not (ckpt / "onnx").exists()
    onnx_actions, summary = actions("onnx")
    meta = ckpt / "onnx" / "runtime.json"
    assert summary["onnx_export"] == str(ckpt / "onnx") and meta.is_file()
    assert summary["config"]["policy"] == str(ckpt) and summary["config"]["runtime"] == "onnx"
    np.testing.assert_allclose(onnx_actions, torch_actions, atol=1e-4)
    made = meta.stat().st_mtime_ns
    actions("onnx")
    assert meta.stat().st_mtime_ns == made  # reused
    later = made / 1e9 + 5
    os.utime(ckpt / "model.safetensors", (later, later))  # weights saved after the export
    actions("onnx")
    assert meta.stat().st_mtime_ns != made
    with pytest.raises(ValueError, match="runtime=onnx runs a checkpoint folder's ONNX export; 'select:"):
        run_evaluation(EvalConfig(task="pick_place", policy=f"select:ckpt={ckpt},k=2", episodes=1, runtime="onnx",
                                  out_dir=str(tmp_path / "w")), progress=False)
    with pytest.raises(ValueError, match=r"unknown runtime 'onx'.*onnx"):
        EvalConfig(runtime="onx").validate()


@pytest.mark.parametrize("every", [1, 3])
def test_a_temporal_ensemble_executes_the_mean_of_every_chunks_prediction(tmp_path: Path, tiny_ckpt: Path,
                                                                        every: int) -> None:
    """temporal_ensemble: the worker queries the policy every `every` steps (temporal_ensemble_every)
    and executes the weighted mean of every chunk's prediction for each step; replayed here with the
    same deterministic policy (noise 0)."""
    from vla.policy.ensemble import TemporalEnsemble

    store = tmp_path / "te.zarr"
    run_evaluation(EvalConfig(task="pick_place", policy=str(tiny_ckpt), episodes=1, seed_range="collect",
                              seed_offset=3, workers=1,
                              horizon=8, n_action_steps=4, cameras=["agentview"], videos=0, noise_scale=0.0,
                              temporal_ensemble=0.3, temporal_ensemble_every=every, record=str(store),
                              out_dir=str(tmp_path / "te")),
                   progress=False)
    recorded = EpisodeStore(store, "r").episode(0, keys=["action"]).steps["action"]
    env = TASKS.make("pick_place", image_size=84, obs_mode="image", cameras=("agentview",), horizon=8)
    obs, _ = env.reset(seed=3)
    policy = load_torch_policy(tiny_ckpt, noise_scale=0.0)
    policy.reset(seed=3)
    ens, firsts = TemporalEnsemble(0.3), []
    for step, action in enumerate(recorded):
        if step % every == 0:
            chunk = policy.sample_chunk([obs])[0]
            firsts.append(chunk[0])
            ens.add(chunk)
        np.testing.assert_allclose(ens.action(), action, atol=1e-5)
        ens.advance()
        obs, *_ = env.step(action)
    assert len(recorded) == 8
    if every == 1:  # a mean of predictions, not each chunk's first action (re-planning)
        assert not np.allclose(recorded[1:], np.array(firsts)[1:], atol=1e-4)
    with pytest.raises(ValueError, match="temporal_ensemble must be a finite rate"):
        EvalConfig(temporal_ensemble=float("nan")).validate()
    with pytest.raises(ValueError, match="temporal_ensemble_every must be an integer >= 1"):
        EvalConfig(temporal_ensemble=0.3, temporal_ensemble_every=0).validate()


def test_a_grounded_heldout_phrasing_drives_the_policy_as_its_training_phrasing_does(tmp_path: Path) -> None:
    from sim.tasks.native.sort import instruction_aliases
    from tests.real.test_joint_vla import build_tiny_checkpoint
    from vla.policy.grounding import phrasing_groups

    vocab = tmp_path / "aliases.json"
    vocab.write_text(json.dumps(instruction_aliases()))
    ck = str(build_tiny_checkpoint(tmp_path / "ck", groups=phrasing_groups(instruction_aliases())))

    def run(name: str, **kw: object) -> tuple[dict, EpisodeStore]:
        cfg = EvalConfig(task="sort", policy=ck, seed_range="collect", seed_offset=3, workers=1, videos=0, horizon=6,
                         record=str(tmp_path / f"{name}.zarr"), out_dir=str(tmp_path / name), **{"episodes": 2, **kw})
        summary = run_evaluation(cfg, progress=False)
        return summary, EpisodeStore.open(tmp_path / f"{name}.zarr")

    grounded, g_store = run("grounded", instruction="@heldout", instruction_vocab=str(vocab))
    assert grounded["grounded_episodes"] == 2
    targets = [e["grounded_to"] for e in grounded["episodes_detail"]]
    assert all(t in instruction_aliases() or any(t in v for v in instruction_aliases().values()) for t in targets)
    own, _ = run("own", instruction="@heldout", instruction_vocab="checkpoint")  # the phrasings ck carries
    assert [e["grounded_to"] for e in own["episodes_detail"]] == targets
    plain, p_store = run("plain", instruction="@heldout")
    assert plain["grounded_episodes"] == 0
    # the episode with the training phrasing it was grounded on, told literally: the same actions
    _, s_store = run("same", instruction=targets[0], episodes=1)
    n = s_store.episode(0).steps["action"].shape[0]
    assert np.array_equal(g_store.episode(0).steps["action"][:n], s_store.episode(0).steps["action"])
    assert not np.array_equal(g_store.episode(0).steps["action"], p_store.episode(0).steps["action"])
    with pytest.raises(FileNotFoundError, match=r"nowhere\.json"):
        EvalConfig(task="sort", policy=ck, instruction_vocab=str(tmp_path / "nowhere.json")).validate()
    with pytest.raises(ValueError, match="policy 'zero' takes none"):
        EvalConfig(task="sort", policy="zero", instruction_vocab=str(vocab)).validate()
    bare = str(build_tiny_checkpoint(tmp_path / "bare"))
    with pytest.raises(ValueError, match=r"instruction_vocab=checkpoint: .*bare: its phrasings form 0 group"):
        EvalConfig(task="sort", policy=bare, instruction_vocab="checkpoint").validate()


def _vla_eval(*args: str) -> tuple[int, list[str], str]:
    """`vla eval ARGS` in a fresh process: (exit code, stderr lines without robosuite's import chatter, stderr)."""
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "vla.cli", "eval", *args], capture_output=True, text=True, timeout=300)
    return res.returncode, [line for line in res.stderr.splitlines() if not line.startswith("[robosuite")], res.stderr


def test_a_checkpoint_with_nan_weights_fails_in_the_parent_in_one_line(tmp_path: Path) -> None:
    """Issue: an intact checkpoint holding NaN weights (here its action scale) passed the parent's check
    and every worker printed a traceback; now one line names the file and the tensor."""
    import torch

    from tests.vla.policy.conftest import small_config
    from vla.policy.checkpoint import save_checkpoint
    from vla.policy.model import VLAModel

    model = VLAModel(small_config((), state_dim=9, action_dim=7))
    with torch.no_grad():
        model.normalizer.action_scale[2] = float("nan")
    ckpt = save_checkpoint(tmp_path / "ckpt", model, None)
    # the observations it takes (9-d proprio, no cameras), so that only its weights are wrong
    rc, errors, stderr = _vla_eval(str(ckpt), "obs_mode=image", "cameras=[]", "episodes=1", "workers=1", "horizon=3",
                                   "videos=0", f"out_dir={tmp_path / 'eval'}")
    assert rc == 2 and len(errors) == 1 and errors[0].startswith("error: "), stderr[-3000:]
    assert "model.safetensors: tensor 'normalizer.action_scale' has non-finite values" in errors[0]
    assert "worker" not in stderr


@pytest.mark.slow
def test_eval_brings_the_observations_the_checkpoint_was_trained_on(tmp_path: Path) -> None:
    """Issue: `vla eval CKPT` of a policy trained with obs_mode=state failed in the worker ("state has shape
    (9,), the policy expects (22,)") unless the user repeated obs_mode=state. Now the evaluator takes the
    mode and the cameras from the checkpoint (and from an ONNX export of it), and a conflicting obs_mode or
    camera list is one line from the parent naming both."""
    from tests.real.test_joint_vla import CAMERAS, build_tiny_checkpoint
    from vla.policy.export import export_onnx

    ckpt = build_tiny_checkpoint(tmp_path / "ckpt", objects=True)  # obs_mode=state: 22-d state, two cameras
    onnx = export_onnx(ckpt, tmp_path / "onnx")
    common = ("task=pick_place", "episodes=1", "workers=1", "horizon=3", "videos=0", "image_size=32")
    for name, policy in (("torch", ckpt), ("onnx", onnx)):
        rc, errors, stderr = _vla_eval(str(policy), *common, f"out_dir={tmp_path / name}")
        assert rc == 0, stderr[-3000:]
        config = json.loads((tmp_path / name / "summary.json").read_text())["config"]
        assert config["obs_mode"] == "state" and config["cameras"] == list(CAMERAS)
    rc, errors, stderr = _vla_eval(str(onnx), *common, "obs_mode=image", f"out_dir={tmp_path / 'conflict'}")
    assert rc == 2 and len(errors) == 1 and "worker" not in stderr, stderr[-3000:]
    assert "obs_mode=image gives a 9-d state" in errors[0] and "trained with obs_mode=state" in errors[0]
    with pytest.raises(ValueError, match=r"cameras=\['agentview'\], but the policy .* was trained on cameras="):
        run_evaluation(EvalConfig(task="pick_place", policy=str(ckpt), episodes=1, cameras=["agentview"],
                                  out_dir=str(tmp_path / "cams")), progress=False)
    # the built-in policies bring no observations: the task's default mode and cameras, as before
    from sim.evaluate import observation_contract

    builtin = observation_contract(EvalConfig(policy="zero"), None)
    assert builtin.obs_mode == "image" and builtin.cameras is None
