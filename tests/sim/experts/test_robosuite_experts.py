"""Scripted robosuite experts on real robosuite environments (state-only, no rendering)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

# Import the task module first: it selects the OSMesa GL backend before mujoco loads.
robosuite_tasks = pytest.importorskip("sim.tasks.robosuite_tasks")

from sim.experts.robosuite_experts import CanExpert, LiftExpert, make_expert  # noqa: E402


def run_episode(env: Any, expert: Any, seed: int, max_steps: int = 400) -> tuple[bool, int]:
    obs, info = env.reset(seed=seed)
    expert.reset(seed)
    for t in range(max_steps):
        action, is_recovery = expert.act(obs, info)
        assert action.shape == (7,) and action.dtype == np.float32 and is_recovery is False
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return bool(info["success"]), t + 1
    return bool(info["success"]), max_steps


@pytest.fixture(scope="module")
def lift() -> Any:
    env = robosuite_tasks.RobosuiteTask("lift", cameras=())
    yield env
    env.close()


def test_lift_expert_succeeds(lift: Any) -> None:
    results = [run_episode(lift, make_expert(lift), seed) for seed in range(5)]
    assert sum(ok for ok, _ in results) >= 4, results


def test_lift_expert_regrasps_after_a_drop(lift: Any) -> None:
    obs, info = lift.reset(seed=3)
    expert = LiftExpert(lift, seed=3)
    # Run until the cube is held and a little above the table, then open the hand (a drop).
    for _ in range(200):
        if lift.grasped() and lift.privileged()["object_pos"][2] > 0.835:
            break
        obs, _, _, _, info = lift.step(expert.act(obs, info)[0])
    assert lift.grasped()
    for _ in range(10):
        obs, _, _, _, info = lift.step(np.array([0, 0, 0.5, 0, 0, 0, -1], np.float32))
    assert not lift.grasped() and not info["success"]
    expert.sync()
    for _ in range(300):
        obs, _, terminated, _, info = lift.step(expert.act(obs, info)[0])
        if terminated:
            break
    assert info["success"]


def test_noise_and_skill_are_seeded_and_change_behaviour(lift: Any) -> None:
    def actions(seed: int, **kw: float) -> np.ndarray:
        obs, info = lift.reset(seed=0)
        expert = LiftExpert(lift, seed=seed, **kw)
        out = []
        for _ in range(30):
            a, _ = expert.act(obs, info)
            out.append(a)
            obs, _, _, _, info = lift.step(a)
        return np.array(out)

    clean = actions(0)
    noisy_a, noisy_b, noisy_c = actions(1, noise=0.2), actions(1, noise=0.2), actions(2, noise=0.2)
    np.testing.assert_array_equal(noisy_a, noisy_b)
    assert np.abs(noisy_a - noisy_c).max() > 0.05
    assert np.abs(noisy_a[:, :6] - clean[:, :6]).std() > 0.1
    # Lower skill moves more slowly: a smaller mean arm action over the approach.
    slow = actions(0, skill=0.0)
    assert np.abs(slow[:10, :3]).mean() < np.abs(clean[:10, :3]).mean()


def test_bad_expert_arguments(lift: Any) -> None:
    with pytest.raises(ValueError, match="skill must be in"):
        LiftExpert(lift, skill=1.5)
    with pytest.raises(ValueError, match="noise must be"):
        LiftExpert(lift, noise=-0.1)
    with pytest.raises(ValueError, match="drives the 'can' task"):
        CanExpert(lift)
    from sim.policies import make_expert

    with pytest.raises(ValueError, match="expert_rot_speed is an option of the native tasks' expert"):
        make_expert(lift, options={"rot_speed": 0.2})
    with pytest.raises(ValueError, match="expert_drop is an option of the native tasks' expert"):
        make_expert(lift, options={"drop": 0.3})
    with pytest.raises(ValueError, match="expert_turn_late is an option of the native tasks' expert"):
        make_expert(lift, options={"turn_late": True})
    with pytest.raises(ValueError, match=r"unknown expert options \['turn_early'\]"):
        make_expert(lift, options={"turn_early": True})


@pytest.mark.slow
@pytest.mark.parametrize("task", ["can", "square"])
def test_can_and_square_experts_succeed(task: str) -> None:
    env = robosuite_tasks.RobosuiteTask(task, cameras=())
    try:
        results = [run_episode(env, make_expert(env), seed) for seed in range(3)]
    finally:
        env.close()
    assert sum(ok for ok, _ in results) >= 2, results
