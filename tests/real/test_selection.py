"""Test-time chunk selection: backward coherence with the previous plan, the coin-flipping network's
familiarity score, the selecting policy on a real tiny VLA, and the evaluator running it."""

from pathlib import Path

import numpy as np
import pytest

from real.selection import (
    ChunkSelection,
    cfn_targets,
    chunk_features,
    coherence_scores,
    fit_cfn,
    load_cfn,
    previous_offset,
    save_cfn,
)


def test_previous_offset_and_coherence() -> None:
    prev = np.linspace(-0.9, 0.9, 32, dtype=np.float32).reshape(16, 2)
    assert previous_offset(prev[5:8], prev) == 5
    assert previous_offset(prev[5:8] + 0.01, prev) is None
    # the sampler overshot the action range where the executed (clipped) prefix did not: still found
    raw = prev.copy()
    raw[6, 1] = 1.004
    assert previous_offset(np.clip(raw[5:8], -1, 1), raw) == 5
    tail = prev[8:]
    cands = np.zeros((2, 16, 2), np.float32)
    cands[0, 3:11] = tail  # continues the previous plan after a 3-action prefix
    s = coherence_scores(cands, tail, 3)
    assert s[0] == 0.0 and s[1] < 0  # the candidate that continues the previous plan is the most coherent
    assert coherence_scores(cands, tail[:0], 3).tolist() == [0.0, 0.0]  # nothing to compare with
    # decay: a candidate off at the switch loses to one off as much but later (BID's discounted coherence)
    early, late = tail.copy(), tail.copy()
    early[0] += 0.5
    late[-1] += 0.5
    two = np.stack([np.r_[cands[0, :3], early, cands[0, 11:]], np.r_[cands[0, :3], late, cands[0, 11:]]])
    u, d = coherence_scores(two, tail, 3), coherence_scores(two, tail, 3, decay=0.5)
    assert u[0] == u[1] and d[1] > d[0]


def test_smoothness_prefers_the_candidate_that_continues_the_prefix() -> None:
    from real.selection import smoothness_scores

    t = np.arange(12, dtype=np.float32)[:, None] * 0.05  # a steady motion
    cont, kink = t.copy(), t.copy()
    kink[4:] += 0.3  # jumps right after a 4-action prefix
    s = smoothness_scores(np.stack([kink, cont]), 4)
    assert s[1] > s[0]
    assert smoothness_scores(np.stack([kink, cont]), 0).tolist() == [0.0, 0.0]  # no prefix: no switch


def test_the_coin_flipping_network_scores_familiar_inputs_higher(tmp_path: Path) -> None:
    from vla.metrics import auroc

    t = cfn_targets(100, 20, seed=1)
    assert set(np.unique(t).tolist()) == {-1.0, 1.0} and t.shape == (100, 20)
    rng = np.random.default_rng(0)
    seen = rng.normal(0, 1, (2000, 6)).astype(np.float32)
    net = fit_cfn(seen, steps=800, seed=0)
    near, far = rng.normal(0, 1, (200, 6)), rng.normal(4, 1, (200, 6))
    assert auroc(np.r_[net.scores(near), net.scores(far)], np.r_[np.ones(200), np.zeros(200)]) > 0.8
    back, length = load_cfn(save_cfn(net, tmp_path / "cfn", length=3))
    assert length == 3 and np.allclose(back.scores(near), net.scores(near))
    with pytest.raises(FileNotFoundError, match="no CFN"):
        load_cfn(tmp_path)
    assert chunk_features(np.ones(2), np.zeros((4, 8, 3)), 2).shape == (4, 2 + 6)


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch

    from vla.config import load_config
    from vla.policy.checkpoint import save_checkpoint
    from vla.policy.config import PolicyConfig
    from vla.policy.model import VLAModel

    cfg = load_config(PolicyConfig, "policy", "tiny", ["d_model=32", "n_heads=2", "trunk_layers=1", "expert_layers=1"],
                      values={"cameras": [], "state_dim": 4, "action_dim": 3})
    torch.manual_seed(0)
    return save_checkpoint(tmp_path_factory.mktemp("sel") / "policy", VLAModel(cfg))


def test_selection_picks_the_most_coherent_of_n_and_keeps_the_prefix(policy_dir: Path) -> None:
    from vla.policy.policy import load_torch_policy

    sel = ChunkSelection(load_torch_policy(policy_dir, seed=0), n=6, by="coherence")
    obs = [{"state": np.zeros(4, np.float32), "images": {}, "instruction": "go"}]
    sel.reset(0)
    first = sel.sample_chunk(obs)
    assert first.shape == (1, 16, 3) and sel.last_scores is not None and (sel.last_scores == 0).all()
    prefix = first[:, 8:11].copy()  # the executor commits the next actions of the running chunk
    second = sel.sample_chunk(obs, prefix=prefix)
    assert np.array_equal(second[:, :3], prefix)
    assert np.argmax(sel.last_scores) == np.argmin(-sel.last_scores)  # the best score was returned
    with pytest.raises(ValueError, match="needs cfn=DIR"):
        ChunkSelection(sel.policy, by="cfn")
    with pytest.raises(ValueError, match="one observation at a time"):
        sel.sample_chunk(obs * 2)
    with pytest.raises(ValueError, match="select: choosing among 6 chunks needs sampling noise"):
        ChunkSelection(load_torch_policy(policy_dir, noise_scale=0.0), n=6, by="coherence")
    ChunkSelection(load_torch_policy(policy_dir, noise_scale=0.0), n=1, by="coherence")  # nothing to choose: fine


@pytest.mark.slow
def test_the_evaluator_runs_a_selecting_policy(tiny_ckpt: Path, tmp_path: Path) -> None:
    import json

    from sim.evaluate import EvalConfig, run_evaluation

    run_evaluation(EvalConfig(task="pick_place", policy=f"select:ckpt={tiny_ckpt},n=3,executed=4", episodes=2,
                              workers=1, videos=0, cameras=["agentview"], image_size=32, horizon=12,
                              n_action_steps=4, out_dir=str(tmp_path)), progress=False)
    assert json.loads((tmp_path / "summary.json").read_text())["episodes"] == 2
    with pytest.raises(ValueError, match="unknown key 'nn'"):
        from real.selection import make_selection

        make_selection(f"ckpt={tiny_ckpt},nn=3")
