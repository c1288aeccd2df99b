import numpy as np
import pytest

from sim.experts.native import NativePickPlaceExpert
from sim.tasks.native.stack3 import SUBTASKS
from vla.registry import TASKS


def test_state_dims_and_default_horizon():
    e = TASKS.make("stack3", cameras=(), obs_mode="state")
    obs, info = e.reset(seed=0)
    assert obs["state"].shape == (9 + 30,)
    assert e.horizon == 400
    assert info["subtask"] == "pick_green" and info["subtasks_done"] == []
    # Cubes start apart on the table.
    pos = [e.cube_pos(c) for c in ("red", "green", "blue")]
    assert min(np.linalg.norm(a[:2] - b[:2]) for i, a in enumerate(pos) for b in pos[i + 1:]) >= 0.1


@pytest.mark.parametrize("seed", [0, 1])
def test_subtasks_progress_in_order_and_success_only_at_the_end(seed):
    e = TASKS.make("stack3", cameras=(), obs_mode="state")
    ex = NativePickPlaceExpert(e)
    obs, info = e.reset(seed=seed)
    ex.reset(seed)
    seen = [info["subtask"]]
    done = False
    while not done:
        obs, r, term, trunc, info = e.step(ex.act(obs))
        if info["subtask"] != seen[-1]:
            seen.append(info["subtask"])
        assert info["success"] == (len(info["subtasks_done"]) == len(SUBTASKS))
        assert info["subtasks_done"] == list(SUBTASKS[: len(info["subtasks_done"])])
        done = term or trunc
    assert info["success"] and term
    assert seen == list(SUBTASKS)
    assert r == 1.0


def test_knocking_the_tower_sends_the_task_back():
    e = TASKS.make("stack3", cameras=(), obs_mode="state")
    ex = NativePickPlaceExpert(e)
    obs, info = e.reset(seed=2)
    ex.reset(2)
    while info["subtask"] != "pick_blue":
        obs, _, _, _, info = e.step(ex.act(obs))
    # Teleport the green cube off the red one: the first stage is no longer done.
    adr = e._qadr["green"]
    e.data.qpos[adr:adr + 2] += 0.15
    obs, _, _, _, info = e.step(np.array([0, 0, 0, 0, 0, 0, -1], np.float32))
    assert info["subtask"] == "pick_green" and info["subtasks_done"] == []
