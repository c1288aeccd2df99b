"""A tiny train -> evaluate -> rank run on a real store (the mechanics, not the figures: the
benchmark measures those)."""

import json
from pathlib import Path

import numpy as np
import pytest

from tests.worldmodel.helpers import record, tiny_job
from worldmodel.checkpoint import load_checkpoint
from worldmodel.data import WorldModelDataError, load_episodes
from worldmodel.evaluate import evaluate
from worldmodel.imagined_env import start_states
from worldmodel.rank import rank

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def tiny_policy(root: Path, store: Path, seed: int) -> Path:
    """A fresh tiny state-only VLA (different seeds: different, untrained behaviour)."""
    import torch

    from vla.config import load_config
    from vla.data.store import EpisodeStore
    from vla.policy.checkpoint import save_checkpoint
    from vla.policy.config import PolicyConfig
    from vla.policy.model import VLAModel

    s = EpisodeStore.open(store)
    stats = s.stats(keys=["state", "action"])
    cfg = load_config(PolicyConfig, "policy", "tiny", ["d_model=32", "n_heads=2", "trunk_layers=1", "expert_layers=1"],
                      values={"cameras": [], "state_dim": s.schema.state_dim, "action_dim": 7})
    torch.manual_seed(seed)
    return save_checkpoint(root / f"policy{seed}", VLAModel(cfg, stats), stats)


def test_evaluate_reports_every_validation_figure_and_a_plot(trained_wm: Path, pick_place_store: Path,
                                                             tmp_path: Path) -> None:
    model, job, _, _, _ = load_checkpoint(trained_wm)
    data = load_episodes([pick_place_store], job.model)
    res = evaluate(model, data, tmp_path)
    assert "1" in res["k_step"] and "10" not in res["k_step"]  # no episode here lasts 11 chunks
    for row in res["k_step"].values():
        assert row["probe_err_m"] >= 0 and row["copy_last_err_m"] >= 0 and row["latent_mse"] >= 0
    assert 0 <= res["chunk_success"]["auroc"] <= 1 and res["chunk_success"]["positives"] == 4
    assert 0 <= res["episode_success"]["auroc"] <= 1 and 0 <= res["episode_success"]["ece"] <= 1
    assert {"logged_success_prob", "shuffled_success_prob", "noised_success_prob"} <= set(res["corruption"])
    assert (tmp_path / "trajectories.png").stat().st_size > 10_000


def test_rank_scores_checkpoints_from_the_same_starts_with_every_proxy(trained_wm: Path, pick_place_store: Path,
                                                                       tmp_path: Path) -> None:
    model = load_checkpoint(trained_wm)[0]
    starts = start_states(pick_place_store, model, episodes=np.arange(3))
    cands = {f"p{i}": {"ckpt": str(tiny_policy(tmp_path, pick_place_store, i)), "real_success": r,
                       "heldout": str(pick_place_store)} for i, r in enumerate([0.1, 0.5, 0.9])}
    res = rank(model, cands, starts, samples=2, n_chunks=3, val_store=pick_place_store, progress=False)
    assert set(res["candidates"]) == {"p0", "p1", "p2"}
    for row in res["candidates"].values():
        assert 0 <= row["imagined_success"] <= 1 and row["imagined_steps"] == 3 * 2 * 3 * 8
        assert np.isfinite(row["bc_val_loss"]) and 0 <= row["logged_success_head"] <= 1
    assert set(res["metrics"]) == {"imagined_success", "soft_success", "neg_bc_val_loss", "logged_success_head"}
    json.dumps(res)  # the result file is plain JSON


def test_a_camera_model_trains_and_rejects_a_store_without_its_camera(tmp_path: Path,
                                                                      pick_place_store: Path) -> None:
    from worldmodel.train import train_world_model

    cams = record(tmp_path / "cams.zarr", 2, 0, horizon=40, cameras=["agentview"], image_size=32)
    job = tiny_job("model.cameras=[agentview]", "model.image_size=32", "model.state_inputs=9", "train.steps=2",
                   "train.val_fraction=0")
    train_world_model([str(cams)], tmp_path / "run", job)
    model = load_checkpoint(tmp_path / "run")[0]
    st = start_states(cams, model)
    assert st.images is not None and st.images.shape == (2, 1, 32, 32, 3)
    with pytest.raises(WorldModelDataError, match=r"no camera 'agentview'.*state-only"):
        start_states(pick_place_store, model)
