"""Phase-conditioned guidance on a real world model and real sim episodes: phase targets from the
demos, the gradient on the clean-action estimate (finite differences), the gate, the committed
prefix, and the evaluator's per-step record of where guidance acted."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from vla.data.store import EpisodeStore
from worldmodel.checkpoint import load_checkpoint, resolve
from worldmodel.reguide import (
    GuidedPolicy,
    PhaseConfig,
    PhaseGuidance,
    PhaseTargets,
    fit_phase_targets,
    parse_dims,
    parse_spec,
    replay_phases,
)

SMALL = PhaseConfig(clusters=6, phases=3, prototypes=50)


@pytest.fixture(scope="module")
def targets(pick_place_store: Path, trained_wm: Path) -> PhaseTargets:
    return fit_phase_targets(pick_place_store, trained_wm, SMALL, task="pick_place")


def band(t: PhaseTargets, lower: float, upper: float) -> PhaseTargets:
    th = t.thresholds.copy()
    th[:, 0], th[:, 1] = lower, upper
    return replace(t, thresholds=th)


def obs_of(store: Path, step: int = 0) -> dict:
    with EpisodeStore.open(store) as s:
        return {"state": s.read("state", step, step + 1)[0], "images": {}, "instruction": "pick the cube"}


def test_phase_targets_from_the_demos(targets: PhaseTargets, pick_place_store: Path, trained_wm: Path,
                                      tmp_path: Path) -> None:
    info = targets.info
    assert info["demos"] == 4  # the 4 expert successes; the failed attempts are not demos of the phases
    assert targets.protos.shape[0] == 3 and targets.mask.any(1).all()
    assert sorted(info["phase_median_time"]) == info["phase_median_time"]  # phases in time order
    lower, upper, switch = (targets.column(k) for k in ("lower", "upper", "switch"))
    assert (lower <= switch).all() and (switch <= upper).all() and targets.tau > 0
    back = PhaseTargets.load(targets.save(tmp_path / "phases"))
    assert torch.equal(back.protos, targets.protos) and np.allclose(back.thresholds, targets.thresholds)
    assert back.wm == str(resolve(trained_wm))
    with pytest.raises(FileNotFoundError, match="no ReGuide phase targets"):
        PhaseTargets.load(tmp_path)
    # replaying logged episodes: one distance per whole chunk, a final phase per episode
    g = PhaseGuidance(load_checkpoint(trained_wm)[0], targets)
    rep = replay_phases(g, pick_place_store, np.arange(4))
    with EpisodeStore.open(pick_place_store) as s:
        assert len(rep["distance"]) == int((s.table().lengths[:4] // 8).sum())
    assert len(rep["final_phase"]) == 4 and ((rep["final_phase"] >= 0) & (rep["final_phase"] < 3)).all()


def test_guidance_is_minus_scale_times_the_distance_gradient(targets: PhaseTargets, trained_wm: Path,
                                                            pick_place_store: Path) -> None:
    model = load_checkpoint(trained_wm)[0]
    g = PhaseGuidance(model, band(targets, -np.inf, np.inf), scale=0.5, late=0.3, num_steps=10)
    g.begin([obs_of(pick_place_store, 0), obs_of(pick_place_store, 30)])
    rng = np.random.default_rng(0)
    x1 = rng.uniform(-0.5, 0.5, (2, 16, 7)).astype(np.float32)  # inside [-1, 1]: no clamp kink
    delta = g(x1, 0.9)
    assert g.guided.all()
    c = model.cfg.chunk
    assert np.all(delta[:, c:] == 0) and np.abs(delta[:, :c]).max() > 0  # only the chunk the model steps
    eps = 1e-3
    for row, h, a in [(0, 0, 0), (0, 3, 2), (1, 7, 6), (1, 1, 4)]:
        plus, minus = x1.copy(), x1.copy()
        plus[row, h, a] += eps
        minus[row, h, a] -= eps
        with torch.no_grad():
            fd = (g.distance(torch.from_numpy(plus), g.phase)[row] - g.distance(torch.from_numpy(minus), g.phase)[row])
        assert -delta[row, h, a] / 0.5 == pytest.approx(fd.item() / (2 * eps), rel=0.05, abs=1e-4)
    # dims=0:3: only the arm's position actions move, by the same amounts
    g3 = PhaseGuidance(model, band(targets, -np.inf, np.inf), scale=0.5, late=0.3, num_steps=10, dims=slice(0, 3))
    g3.begin([obs_of(pick_place_store, 0), obs_of(pick_place_store, 30)])
    d3 = g3(x1, 0.9)
    assert not d3[..., 3:].any() and np.allclose(d3[..., :3], delta[..., :3])
    # early Euler steps, a zero scale and a closed gate leave the clean estimate alone
    assert not g(x1, 0.5).any()
    g.begin([obs_of(pick_place_store, 0)] * 2)
    assert not PhaseGuidance(model, targets, scale=0.0)(x1, 0.9).any()
    closed = PhaseGuidance(model, band(targets, np.inf, np.inf), scale=0.5)
    closed.begin([obs_of(pick_place_store, 0)] * 2)
    assert not closed(x1, 0.9).any() and not closed.guided.any()


def test_state_space_measures_task_frame_features(pick_place_store: Path, trained_wm: Path, tmp_path: Path) -> None:
    """space=state: prototypes are the demos' true gripper-to-cube offsets, zone-to-cube offsets and
    fingers (standardised); the guidance is still minus the gradient of that distance."""
    from worldmodel.reguide import standardise

    cfg = replace(SMALL, space="state", state_features="16:19,19:22-9:12,7:9")
    t = fit_phase_targets(pick_place_store, trained_wm, cfg, task="pick_place")
    assert t.feature is not None and t.feature["map"].shape == (8, 22) and t.protos.shape[2] == 8
    with EpisodeStore.open(pick_place_store) as s:
        demo_states = torch.from_numpy(s.read("state", 0, int(s.table().lengths[:4].sum())).astype(np.float32))
    truth = standardise(demo_states, t.feature)
    protos = t.protos[t.mask]
    nearest = torch.cdist(protos, truth, compute_mode="donot_use_mm_for_euclid_dist").min(1).values
    assert nearest.max() < 1e-4  # every prototype is a demo frame's features
    back = PhaseTargets.load(t.save(tmp_path / "phases"))
    assert back.feature is not None and all(torch.equal(back.feature[k], t.feature[k]) for k in t.feature)
    model = load_checkpoint(trained_wm)[0]
    g = PhaseGuidance(model, band(back, -np.inf, np.inf), scale=0.5, late=0.3, num_steps=10)
    g.begin([obs_of(pick_place_store, 10)])
    # anchored: the state head's reading of the current latent maps back onto the true state, so a
    # prediction is the true state plus the predicted change
    now = torch.from_numpy(obs_of(pick_place_store, 10)["state"][None].astype(np.float32))
    assert torch.allclose(back.embed(model, g.z, g.anchor), standardise(now, back.feature), atol=1e-4)
    x1 = np.random.default_rng(1).uniform(-0.5, 0.5, (1, 16, 7)).astype(np.float32)
    delta = g(x1, 0.9)
    eps = 1e-3
    for h, a in [(0, 0), (2, 2), (5, 6)]:
        plus, minus = x1.copy(), x1.copy()
        plus[0, h, a] += eps
        minus[0, h, a] -= eps
        with torch.no_grad():
            fd = g.distance(torch.from_numpy(plus), g.phase)[0] - g.distance(torch.from_numpy(minus), g.phase)[0]
        assert -delta[0, h, a] / 0.5 == pytest.approx(fd.item() / (2 * eps), rel=0.05, abs=1e-4)
    with pytest.raises(ValueError, match="space must be one of latent, state"):
        replace(SMALL, space="pixels").validate()
    with pytest.raises(ValueError, match="state_features is for space=state"):
        replace(SMALL, state_features="0:3").validate()


def test_guidance_never_alters_a_committed_prefix(targets: PhaseTargets, trained_wm: Path, pick_place_store: Path,
                                                  tmp_path: Path) -> None:
    from tests.worldmodel.test_evaluate_rank import tiny_policy
    from vla.policy.policy import load_torch_policy

    policy = load_torch_policy(tiny_policy(tmp_path, pick_place_store, 0), seed=0)
    model = load_checkpoint(trained_wm)[0]
    guided = GuidedPolicy(policy, PhaseGuidance(model, band(targets, -np.inf, np.inf), scale=20.0, late=1.0))
    obs = [obs_of(pick_place_store, 5)]
    prefix = np.full((1, 3, 7), 0.25, np.float32)
    policy.reset(0)
    plain = policy.sample_chunk(obs, prefix=prefix)
    guided.reset(0)
    out = guided.sample_chunk(obs, prefix=prefix)
    assert guided.last_guided.tolist() == [True]
    assert np.array_equal(out[:, :3], prefix) and np.array_equal(plain[:, :3], prefix)
    assert np.abs(out[:, 3:8] - plain[:, 3:8]).max() > 1e-3  # guidance did act on the free actions
    with pytest.raises(ValueError, match="already guided"):
        guided.sample_chunk(obs, guidance=lambda x, t: x)


def test_spec_errors_are_one_line() -> None:
    assert parse_spec("ckpt=a,phases=b,scale=0.1") == {"ckpt": "a", "phases": "b", "scale": "0.1"}
    with pytest.raises(ValueError, match=r"unknown key 'scal'.*did you mean 'scale'"):
        parse_spec("ckpt=a,phases=b,scal=1")
    with pytest.raises(ValueError, match="missing phases="):
        parse_spec("ckpt=a")
    with pytest.raises(ValueError, match="'oops' is not key=value"):
        parse_spec("ckpt=a,oops")
    assert parse_dims("0:3") == slice(0, 3) and parse_dims("") is None
    for bad in ("3", "3:1", "a:b"):
        with pytest.raises(ValueError, match="reguide: dims"):
            parse_dims(bad)


@pytest.mark.slow
def test_evaluator_records_where_guidance_acted(targets: PhaseTargets, trained_wm: Path, pick_place_store: Path,
                                               tmp_path: Path) -> None:
    from sim.evaluate import EvalConfig, run_evaluation
    from tests.worldmodel.test_evaluate_rank import tiny_policy

    ckpt = tiny_policy(tmp_path, pick_place_store, 1)
    results = {}
    for name, t in (("open", band(targets, -np.inf, np.inf)), ("closed", band(targets, np.inf, np.inf))):
        folder = t.save(tmp_path / name)
        cfg = EvalConfig(task="pick_place", policy=f"reguide:ckpt={ckpt},phases={folder},scale=1.0", episodes=2,
                         seed_range="collect", seed_offset=7, workers=1, videos=0, obs_mode="state", cameras=[],
                         horizon=20,
                         record=str(tmp_path / f"{name}.zarr"), source="guided", out_dir=str(tmp_path / f"eval_{name}"))
        run_evaluation(cfg, progress=False)
        results[name] = json.loads((tmp_path / f"eval_{name}" / "summary.json").read_text())["episodes_detail"]
    for ep in results["open"]:  # every executed step came from a guided chunk
        assert ep["guided_steps"] == list(range(ep["length"]))
    assert all(ep["guided_steps"] == [] for ep in results["closed"])
    with EpisodeStore.open(tmp_path / "open.zarr") as s:
        assert set(s.table().source.tolist()) == {"guided"}


@pytest.mark.slow
def test_a_camera_world_model_guides_from_live_images(tmp_path: Path) -> None:
    from tests.worldmodel.helpers import record, tiny_job
    from worldmodel.train import train_world_model

    cams = record(tmp_path / "cams.zarr", 2, 0, horizon=40, cameras=["agentview"], image_size=32)
    train_world_model([str(cams)], tmp_path / "run", tiny_job("model.cameras=[agentview]", "model.image_size=32",
                                                              "model.state_inputs=9", "train.steps=2",
                                                              "train.val_fraction=0"))
    t = fit_phase_targets(cams, tmp_path / "run", PhaseConfig(clusters=4, phases=2, prototypes=20))
    model = load_checkpoint(tmp_path / "run")[0]
    g = PhaseGuidance(model, band(t, -np.inf, np.inf), scale=1.0)
    with EpisodeStore.open(cams) as s:
        obs = [{"state": s.read("state", k, k + 1)[0], "images": {"agentview": s.read("images/agentview", k, k + 1)[0]},
                "instruction": "pick"} for k in (0, 20)]
    g.begin(obs)
    assert np.abs(g(np.zeros((2, 16, 7), np.float32), 0.9)).max() > 0 and g.guided.all()
    with pytest.raises(ValueError, match=r"needs camera 'agentview' in the observation \(it has: \[\]\)"):
        g.begin([{"state": obs[0]["state"], "images": {}, "instruction": "pick"}])
