"""The lean control step (sim/tasks/robosuite_lean.py) against robosuite's own env.step."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

# Import our module (not robosuite) first: it selects the OSMesa GL backend before mujoco loads.
robosuite_tasks = pytest.importorskip("sim.tasks.robosuite_tasks")

from sim.experts.robosuite_experts import make_expert  # noqa: E402
from sim.tasks import robosuite_lean  # noqa: E402

RobosuiteTask = robosuite_tasks.RobosuiteTask


def test_torques_match_robosuite_controller() -> None:
    """On non-policy substeps the compiled OSC writes the ctrl robosuite's robot.control writes."""
    env = RobosuiteTask("lift", cameras=())
    try:
        obs, info = env.reset(seed=1)
        expert = make_expert(env, seed=1)
        rs = env.robosuite_env
        lean = robosuite_lean.LeanStepper(rs)
        for _ in range(12):
            obs, _, _, _, info = env.step(expert.act(obs, info)[0])
            lean.arm = rs.robots[0].composite_controller.part_controllers["right"]
            rs.sim.data.ctrl[:] = 0.0
            rs._pre_action(np.zeros(7), policy_step=False)
            expected = rs.sim.data.ctrl[:7].copy()
            rs.sim.data.ctrl[:7] = 0.0
            lean._arm_ctrl()
            np.testing.assert_allclose(rs.sim.data.ctrl[:7], expected, rtol=1e-9, atol=1e-9)
            assert np.abs(expected).max() > 0.1  # the arm is actually being driven
    finally:
        env.close()


@pytest.mark.parametrize("task", ["lift", "can"])
def test_same_episodes_as_robosuite_step(task: str) -> None:
    """Same seeds and actions, two episodes (robosuite rebuilds its controllers at each reset):
    the lean step and robosuite's env.step reach the same states, rewards and successes."""
    lean = RobosuiteTask(task, cameras=())
    ref = RobosuiteTask(task, cameras=(), lean_step=False)
    try:
        assert lean._lean_wanted and not ref._lean_wanted
        for seed in (0, 1):
            a, ia = lean.reset(seed=seed)
            b, _ = ref.reset(seed=seed)
            expert = make_expert(lean, seed=seed)
            for _ in range(60):
                action = expert.act(a, ia)[0]
                a, ra, ta, _, ia = lean.step(action)
                b, rb, tb, _, ib = ref.step(action)
                # Float rounding only: the torques agree to ~1e-12 and contacts do not amplify it here.
                np.testing.assert_allclose(a["state"], b["state"], atol=1e-5)
                assert (ra, ta, ia["success"]) == (rb, tb, ib["success"])
                if ta:
                    break
            np.testing.assert_allclose(lean.robosuite_env.sim.data.qpos, ref.robosuite_env.sim.data.qpos, atol=1e-5)
    finally:
        lean.close()
        ref.close()


def test_unsupported_configurations_keep_robosuite_step() -> None:
    assert not robosuite_lean.supported(SimpleNamespace(lite_physics=False, ignore_done=True, robots=[]))
    assert not robosuite_lean.supported(SimpleNamespace(lite_physics=True, ignore_done=False, robots=[None]))
    with pytest.raises(ValueError, match="BASIC OSC_POSE"):
        robosuite_lean.LeanStepper(SimpleNamespace(lite_physics=True, ignore_done=True, robots=[]))
