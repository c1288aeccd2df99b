"""worldmodel/chunk_truth.py: chunk-level truth from the simulator (saved states reached again by replay,
K candidates, the policy's continuation) and a world model's scores against it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from worldmodel.chunk_truth import TruthConfig, build, load_truth, score_truth, values


def state_policy(root: Path) -> Path:
    """A fresh tiny state-mode pick_place policy (the poses in its 22-d state, no cameras)."""
    import torch

    from vla.policy.checkpoint import save_checkpoint
    from vla.policy.config import load_policy_config
    from vla.policy.model import VLAModel

    torch.manual_seed(0)
    cfg = load_policy_config("tiny", cameras=[], state_dim=22, action_dim=7, d_model=32, n_heads=2,
                             trunk_layers=1, expert_layers=1, chunk_size=8, max_prefix=4, num_steps=2)
    return save_checkpoint(root / "state_policy", VLAModel(cfg))


def tiny(policy: Path, out: Path, **kw) -> TruthConfig:
    args = {"policy": str(policy), "episodes": 2, "states_per_episode": 2, "every": 4, "noisy": 2, "perturbed": 1,
            "execute": 4, "n_action_steps": 4, "horizon": 12, "image_size": 32, "out": str(out)}
    return TruthConfig(**{**args, **kw})


def test_a_truth_set_replays_its_states_exactly_and_keeps_every_candidates_outcome(tiny_ckpt: Path,
                                                                                   tmp_path: Path) -> None:
    folder = build(tiny(tiny_ckpt, tmp_path / "a"), progress=False)
    arrays, meta = load_truth(folder)
    s, k = arrays["chunks"].shape[:2]
    assert (s, k) == (4, 4) and meta["candidates"] == 4 and meta["cameras"] == ["agentview"]
    assert meta["candidate_kinds"] == ["noise_free", "noisy", "noisy", "perturbed"]
    assert arrays["success"].shape == (4, 4, 1) and arrays["images"].shape == (4, 1, 32, 32, 3)
    assert list(arrays["step"]) == [0, 4, 0, 4] and meta["max_replay_error"] == 0.0  # the replay is exact
    assert values(arrays).shape == (4, 4)
    # what the set says with no model: each kind's success, and no ceiling from one continuation per candidate
    assert meta["success_by_kind"]["perturbed"] == pytest.approx(arrays["success"][:, 3].mean())
    assert set(meta["success_by_kind"]) == {"noise_free", "noisy", "perturbed"}
    assert meta["selection_ceiling"]["all"]["continuations"] == 1 and np.isnan(meta["selection_ceiling"]["all"]["gain"])
    # candidate 0 is the chunk the policy executes at that state without selection; the others differ
    from vla.policy.specs import load_spec

    plain = load_spec(str(tiny_ckpt), noise_scale=0.0)
    obs = {"state": arrays["state"][1], "images": {"agentview": arrays["images"][1, 0]},
           "instruction": str(arrays["instruction"][1])}
    np.testing.assert_allclose(arrays["chunks"][1, 0], np.asarray(plain.sample_chunk([obs]))[0], atol=1e-5)
    assert not np.allclose(arrays["chunks"][1, 0], arrays["chunks"][1, 1])
    again, _ = load_truth(build(tiny(tiny_ckpt, tmp_path / "b"), progress=False))
    for key in ("chunks", "success", "steps", "state"):
        np.testing.assert_array_equal(arrays[key], again[key])  # seeded: the same set again


def test_a_folder_of_another_version_or_kind_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a chunk-truth set"):
        load_truth(tmp_path)
    (tmp_path / "truth.npz").write_bytes(b"")
    (tmp_path / "meta.json").write_text(json.dumps({"format": "chunk-truth", "version": 99}))
    with pytest.raises(ValueError, match="version 99; this code reads 'chunk-truth' version 1"):
        load_truth(tmp_path)
    with pytest.raises(ValueError, match="episodes must be >= 1"):
        TruthConfig(policy="x", episodes=0).validate()
    with pytest.raises(ValueError, match="seed"):
        TruthConfig(policy="x", seed_range="report", seed_offset=10**9).validate()


@pytest.mark.slow
def test_a_world_model_scores_every_candidate_and_the_report_compares_them(trained_wm: Path, tmp_path: Path) -> None:
    from worldmodel.checkpoint import load_checkpoint
    from worldmodel.metrics import chunk_report

    arrays, meta = load_truth(build(tiny(state_policy(tmp_path), tmp_path / "s", states_per_episode=1),
                                    progress=False))
    model = load_checkpoint(trained_wm)[0]
    scores = score_truth(model, arrays, meta)
    assert scores.shape == values(arrays).shape == (2, 4) and np.isfinite(scores).all()
    report = chunk_report(scores, values(arrays))
    assert report["states"] == 2 and 0.0 <= report["regret"] <= 1.0


@pytest.mark.slow
def test_training_on_a_collect_truth_set_fits_the_order_of_its_candidates(pick_place_store: Path,
                                                                          tmp_path: Path) -> None:
    """train.rank_truth: the candidates' outcomes at one state train the value after each candidate; a set of
    tune or report seeds is refused (they measure the model)."""
    import torch

    from tests.worldmodel.helpers import tiny_job
    from worldmodel.checkpoint import load_checkpoint
    from worldmodel.chunk_rank import chunk_rank_loss, load_chunk_sets, sample_states
    from worldmodel.train import train_world_model

    policy = state_policy(tmp_path)
    folder = build(tiny(policy, tmp_path / "collect", seed_range="collect", seed_offset=900_000, execute=8,
                        states_per_episode=2, horizon=40), progress=False)
    arrays, _ = load_truth(folder)
    arrays["success"][:, :2] = True  # a set whose candidates differ (a random tiny policy fails them all)
    arrays["steps"][:, :2] = 10
    np.savez_compressed(folder / "truth.npz", **arrays)
    job = tiny_job("train.steps=40", "train.val_fraction=0", "train.rank_states=4", "train.w_rank=5",
                   f"train.rank_truth=[{folder}]")
    out = train_world_model([str(pick_place_store)], tmp_path / "wm", job)
    assert "rank_pairwise" in out["last"]
    model, _, meta, _, _ = load_checkpoint(tmp_path / "wm")
    assert meta["rank_truth"]["states"] == 4
    sets = load_chunk_sets([str(folder)], model.cfg)
    assert sets.chunks.shape[1:3] == (4, 8) and (sets.value[:, :2] > 0.9).all() and (sets.value[:, 2:] == 0).all()
    with torch.no_grad():
        pairwise, _ = chunk_rank_loss(model, sample_states(sets, 4, np.random.default_rng(0)))
    assert pairwise < 0.3  # log 2 = 0.69 is no order at all
    tune = build(tiny(policy, tmp_path / "tune", execute=8, states_per_episode=1), progress=False)
    with pytest.raises(ValueError, match="built on 'tune' seeds; training takes only collect-range sets"):
        load_chunk_sets([str(tune)], model.cfg)


def test_a_sets_own_figures_read_its_kinds_and_what_choosing_could_gain() -> None:
    from worldmodel.chunk_truth import set_figures

    ok = np.zeros((6, 4, 2))
    ok[:, 0] = 1.0  # the noise-free chunk always succeeds
    ok[:, 1, 0] = 1.0  # one sample succeeds in its first continuation only
    fig = set_figures(ok, ["noise_free", "noisy", "noisy", "perturbed"])
    assert fig["success_by_kind"] == {"noise_free": 1.0, "noisy": 0.25, "perturbed": 0.0}
    assert fig["selection_ceiling"]["all"]["gain"] == 0.0  # nothing beats the noise-free chunk
    assert fig["selection_ceiling"]["policy_samples"]["candidates"] == 3
