import numpy as np

from sim.experts.native import NativePickPlaceExpert
from sim.intervener import ExpertIntervener
from sim.rollout import run_expert_episode, run_intervention_episode, schema_for_env
from vla.data.schema import validate_episode
from vla.data.store import EpisodeStore
from vla.registry import TASKS


def test_expert_episode_validates_and_appends_to_a_real_store(tmp_path):
    env = TASKS.make("pick_place")  # two 84x84 cameras
    schema = schema_for_env(env)
    assert schema.cameras == {"agentview": (84, 84), "robot0_eye_in_hand": (84, 84)}
    assert (schema.state_dim, schema.action_dim) == (9, 7)
    expert = NativePickPlaceExpert(env)
    ep = run_expert_episode(env, expert, seed=7)
    assert ep.success and ep.source == "demo" and ep.seed == 7 and ep.task == "pick_place"
    assert ep.extra["subtasks_done"] == ["pick_cube", "place_cube"]
    validate_episode(ep, schema, 0)
    store = EpisodeStore.create(tmp_path / "demos.zarr", schema)
    idx = store.append_episode(ep)
    store.append_episode(run_expert_episode(env, expert, seed=8))
    store.close()
    back = EpisodeStore.open(tmp_path / "demos.zarr").episode(idx)
    assert len(back) == len(ep) and back.success and back.instruction == ep.instruction
    np.testing.assert_array_equal(back.steps["images/agentview"], ep.steps["images/agentview"])
    np.testing.assert_allclose(back.steps["action"], ep.steps["action"])
    # Step t stores the observation before action t: timestamps start at 0, 20 Hz.
    np.testing.assert_allclose(back.steps["timestamp"][:3], [0.0, 0.05, 0.1], atol=1e-9)


def test_state_only_episode_for_stack3(tmp_path):
    env = TASKS.make("stack3", cameras=(), obs_mode="state")
    schema = schema_for_env(env)
    assert schema.cameras == {} and schema.state_dim == 39
    ep = run_expert_episode(env, NativePickPlaceExpert(env), seed=0)
    store = EpisodeStore.create(tmp_path / "s.zarr", schema)
    store.append_episode(ep)
    assert store.n_episodes == 1 and bool(store.table().success[0])


def test_intervention_episode_flags_reach_the_store(tmp_path):
    env = TASKS.make("pick_place", cameras=(), obs_mode="state")
    expert = NativePickPlaceExpert(env)
    expert.reset(1)
    drift = np.array([0, 1.0, 0.3, 0, 0, 0, -1], np.float32)
    calls = {"n": 0}

    def policy(obs):  # good for 12 steps, then drifts away
        calls["n"] += 1
        return expert.act(obs) if calls["n"] <= 12 else drift

    ep = run_intervention_episode(env, policy, ExpertIntervener(env, mode="rac"), seed=1, policy_version=3)
    assert ep.source == "intervention" and ep.extra["takeovers"][0][1] == "off_plan"
    inter, rec = ep.steps["is_intervention"], ep.steps["is_recovery"]
    first = int(np.argmax(inter))
    assert not inter[:first].any() and inter[first:].all()  # RaC: the intervener keeps control to the end
    assert rec[first] and rec[first:].sum() >= 3 and not rec[:first].any()
    assert "pick_cube" in ep.extra["subtasks_done"]
    assert (ep.steps["policy_version"] == 3).all()
    store = EpisodeStore.create(tmp_path / "rac.zarr", schema_for_env(env))
    store.append_episode(ep)
    t = store.table()
    assert t.n_recovery_steps[0] == rec.sum() and t.n_intervention_steps[0] == inter.sum()
