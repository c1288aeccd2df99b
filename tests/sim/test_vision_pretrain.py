"""Perception pretraining from privileged state: its targets, its weights' fit to the policy, and the
job stage that hands them to pretraining."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sim.vision_pretrain import TARGETS, collect_frames, perception_targets, r2_per_target, run


def test_targets_are_the_cube_pose_and_goal_with_yaw_mod_90() -> None:
    from vla.registry import TASKS

    env = TASKS.make("pick_place", image_size=32)
    env.reset(seed=3)
    u = env.unwrapped
    t = perception_targets(u)
    p = u.privileged()
    assert t.shape == (len(TARGETS),) and t.dtype == np.float32
    np.testing.assert_allclose(t[:3], p["objects"]["cube"]["pos"], atol=1e-6)
    np.testing.assert_allclose(t[7:], p["goal_pos"], atol=1e-6)
    assert np.hypot(t[3], t[4]) == pytest.approx(1, abs=1e-5) and np.hypot(t[5], t[6]) == pytest.approx(1, abs=1e-5)
    # a cube turned by 90 degrees looks the same and gets the same yaw targets
    body = u._cube_body
    jnt = u.model.body_jntadr[body]
    qadr = u.model.jnt_qposadr[jnt]
    w, x, y, z = u.data.qpos[qadr + 3:qadr + 7]
    c = s = np.sqrt(0.5)  # q * (cos 45, 0, 0, sin 45): a quarter turn about the vertical
    u.data.qpos[qadr + 3:qadr + 7] = [w * c - z * s, x * c + y * s, y * c - x * s, z * c + w * s]
    import mujoco

    mujoco.mj_forward(u.model, u.data)
    np.testing.assert_allclose(perception_targets(u)[3:7], t[3:7], atol=1e-5)
    env.close()


def test_r2_is_one_for_a_perfect_fit_and_zero_for_the_mean() -> None:
    y = np.random.default_rng(0).normal(size=(50, 2))
    np.testing.assert_allclose(r2_per_target(y, y), 1.0)
    np.testing.assert_allclose(r2_per_target(np.broadcast_to(y.mean(0), y.shape), y), 0.0, atol=1e-12)


def test_weights_fit_the_policy_they_were_made_for(tmp_path: Path) -> None:
    """The file holds each camera encoder of the preset and loads into a policy built for the same
    cameras; frames come every `every` steps of whole expert episodes."""
    import torch

    from vla.policy.checkpoint import load_partial_weights
    from vla.policy.config import load_policy_config
    from vla.policy.model import VLAModel

    images, targets, episode = collect_frames("pick_place", range(500_000, 500_002), 32, every=10, progress=False)
    assert set(images) == {"agentview", "robot0_eye_in_hand"} and len(targets) == len(episode)
    assert set(episode) == {0, 1} and images["agentview"].shape[1:] == (32, 32, 3)
    report = run("pick_place", 3, tmp_path / "v.safetensors", "tiny", ["d_model=32", "vision_channels=[8,16]"],
                 image_size=32, every=10, steps=2, progress=False)
    # the goal's height is the same in every scene: no target, no score
    assert set(report["val_r2"]) == set(TARGETS) - {"goal_z"} and report["steps"] == 2
    assert json.loads((tmp_path / "v.json").read_text())["weights"] == str(tmp_path / "v.safetensors")
    frames = np.load(tmp_path / "v.npz")
    k = len(TARGETS) - 1
    assert frames["targets"].shape == (len(frames["images/agentview"]), k)  # standardised, the constant one left out
    model = VLAModel(load_policy_config("tiny", cameras=report["cameras"], d_model=32, vision_channels=[8, 16],
                                        perception_dim=k))
    n = load_partial_weights(model, tmp_path / "v.safetensors")
    assert n == sum(1 for k in model.state_dict() if k.startswith(("vision.", "perception_head.")))
    # d_model 128: does not fit
    wrong = VLAModel(load_policy_config("tiny", cameras=report["cameras"], perception_dim=k))
    with pytest.raises(Exception, match="has shape"):
        load_partial_weights(wrong, tmp_path / "v.safetensors")
    assert torch.isfinite(model.vision["agentview"].proj.weight).all()


@pytest.mark.slow
def test_job_pretrains_from_the_vision_stage(tmp_path: Path) -> None:
    out = tmp_path / "job"
    args = [f"out_dir={out}", "stages=[sim_demos,vision_pretrain,pretrain]", "demos.episodes=2",
            "demos.image_size=32", "demos.workers=1", "vision.episodes=2", "vision.steps=2", "vision.every=10",
            "pretrain.train=debug", "pretrain.steps=2", "pretrain.batch_size=4",
            'pretrain.overrides=["policy.d_model=32","policy.vision_channels=[8,16]"]']
    res = subprocess.run([sys.executable, "-m", "vla.cli", "run", *args], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    weights = summary["vision_pretrain"]["weights"]
    assert Path(weights).is_file() and "object_cos4yaw" in summary["vision_pretrain"]["held-out R^2"]
    # each camera's encoder: 2 blocks of (conv, norm, conv, norm) weights and biases, its projection and positions
    assert f"initialised {2 * (16 + 3) + 2} tensors from {weights}" in res.stdout  # + the perception head's 2
    from vla.policy.checkpoint import load_config

    k = np.load(summary["vision_pretrain"]["frames file"])["targets"].shape[1]  # those that vary in 2 episodes
    assert 0 < k < len(TARGETS) and load_config(summary["pretrain"]["checkpoint"]).perception_dim == k
