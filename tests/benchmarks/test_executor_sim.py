"""benchmarks/executor_sim.py: the executor against the simulator's arm, with the bridge's perturbations
(`--perturb`): one name means the same camera, colours and delays as in `vla eval` and the ROS bridge."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sim.perturb import perturbed
from tests.benchmarks.helpers import load_script
from vla.registry import TASKS

SPEC = "camera_shift:10,surface_colour:0.2"


def make() -> object:
    return TASKS.make("pick_place", cameras=("agentview",), image_size=32)


def episode(es, tiny_ckpt: Path, spec: str, seed: int = 1000) -> tuple[object, list[np.ndarray], dict]:
    from real.joint_vla import JointSpaceVLA
    from sim.policies import load_policy

    env = make()
    es.set_perturbation(env, spec)
    sent: list[np.ndarray] = []
    step_joints = env.step_joints

    def record(q: np.ndarray, finger: float) -> object:
        sent.append(np.append(q, finger))
        return step_joints(q, finger)

    env.step_joints = record
    policy = JointSpaceVLA(load_policy(str(tiny_ckpt), env, seed=0, noise_scale=0.0))
    cfg = es.load_deploy_config(es.NODE_CONFIG)
    return env, sent, es.run_episode(env, cfg, policy, "-", "sync", seed, delay_ticks=1)


def test_the_bridges_perturbations_match_the_evaluators_and_delay_the_arm(tiny_ckpt: Path, monkeypatch) -> None:
    es = load_script("executor_sim")
    monkeypatch.setattr(es, "HORIZON", 8)
    env, _, result = episode(es, tiny_ckpt, SPEC)
    assert result["violations"] == 0 and result["ticks"] == 8
    ref = perturbed(make(), SPEC, "image")
    ref.reset(seed=1000)
    u, r = env.unwrapped, ref.unwrapped
    np.testing.assert_allclose(u.model.cam_pos, r.model.cam_pos)  # the same camera moved as in `vla eval`
    np.testing.assert_allclose(u.model.geom_rgba, r.model.geom_rgba)  # and the same surfaces recoloured
    assert not np.allclose(u.model.geom_rgba, make().unwrapped.model.geom_rgba)
    _, clean, _ = episode(es, tiny_ckpt, "none")
    _, late, _ = episode(es, tiny_ckpt, "action_latency:2")
    # the first chunk is planned from the same start either way: two ticks late, the arm gets the same commands
    np.testing.assert_allclose(late[2:5], clean[0:3], atol=1e-6)


def test_a_perturbation_an_image_policy_cannot_meet_is_one_line() -> None:
    es = load_script("executor_sim")
    with pytest.raises(ValueError, match="only obs_mode=state reads"):
        es.set_perturbation(make(), "pose_noise:1")
