import numpy as np
import pytest

from sim.experts.native import NativePickPlaceExpert
from sim.intervener import ExpertIntervener, task_view
from vla.interfaces import Intervener
from vla.registry import TASKS
from vla.robot.rotations import quat_xyzw_to_mat

DRIFT = np.array([0, 1.0, 0.3, 0, 0, 0, -1], np.float32)


def session(env, inter, policy, seed=1, steps=200):
    """A RaC/HG-DAgger session loop; returns per-step flags 'p' (policy), 'R' (recovery), 'C'."""
    obs, info = env.reset(seed=seed)
    inter.reset()
    flags = []
    for t in range(steps):
        info["policy_action"] = policy(t, obs, info)
        if inter.wants_control(obs, info):
            action, recovery = inter.act(obs, info)
            flags.append("R" if recovery else "C")
        else:
            if inter.episode_done:
                break
            action = info["policy_action"]
            flags.append("p")
        obs, _, term, trunc, info = env.step(action)
        if term or trunc:
            break
    return "".join(flags), info


@pytest.fixture
def env():
    return TASKS.make("pick_place", cameras=(), obs_mode="state")


def good_then(env, bad, switch):
    expert = NativePickPlaceExpert(env)
    expert.reset(1)
    return lambda t, obs, info: expert.act(obs) if t < switch else bad(t, obs, info)


def test_implements_the_protocol(env):
    assert isinstance(ExpertIntervener(env), Intervener)
    with pytest.raises(ValueError, match="unknown intervener mode 'dagger'"):
        ExpertIntervener(env, mode="dagger")


def test_rac_rewinds_then_corrects_the_current_subtask(env):
    inter = ExpertIntervener(env, mode="rac")
    flags, info = session(env, inter, good_then(env, lambda *_: DRIFT, 12))
    assert inter.takeovers and inter.takeovers[0][1] == "off_plan"
    takeover = flags.index("R")
    n_rec = flags.count("R")
    # Policy steps, then one contiguous block of recovery steps, then correction steps only.
    assert set(flags[:takeover]) == {"p"} and takeover > 12
    assert flags[takeover:takeover + n_rec] == "R" * n_rec and n_rec >= 3
    assert set(flags[takeover + n_rec:]) == {"C"}
    # The correction finished the sub-task that was current at takeover, then the episode ends.
    assert inter.episode_done and not inter.correction_failed
    assert "pick_cube" in info["subtasks_done"]


def test_rewind_moves_back_towards_the_recorded_path(env):
    inter = ExpertIntervener(env, mode="rac")
    policy = good_then(env, lambda *_: DRIFT, 12)
    obs, info = env.reset(seed=1)
    path = []
    for t in range(100):
        info["policy_action"] = policy(t, obs, info)
        if inter.wants_control(obs, info):
            break
        path.append(env.eef_pos())
        obs, _, _, _, info = env.step(info["policy_action"])
    far = env.eef_pos()
    while inter.phase in ("policy", "rewind"):
        action, recovery = inter.act(obs, info)
        if not recovery:
            break
        obs, _, _, _, info = env.step(action)
        inter.wants_control(obs, info)
    # The rewind ended near a recorded in-distribution point, far from where the drift ended.
    nearest = min(np.linalg.norm(p - env.eef_pos()) for p in path[:-inter.min_rewind])
    assert nearest < 0.03 and np.linalg.norm(far - env.eef_pos()) > 0.1


def carry_then_open(env):
    """The expert's moves until the cube is lifted 8 cm, then the gripper opens (the cube is let go
    mid-air); `state["opened_at"]` is the first step it commanded open."""
    expert = NativePickPlaceExpert(env)
    expert.reset(1)
    state = {"lifted": False, "opened_at": None}

    def policy(t, obs, info):
        a = expert.act(obs)
        if info["subtask"] == "place_cube" and env.eef_pos()[2] > 0.08:
            state["lifted"] = True
        if state["lifted"]:
            a = a.copy()
            a[6] = -1.0
            if state["opened_at"] is None:
                state["opened_at"] = t
        return a
    return policy, state


def test_drop_triggers_regressed(env):
    drop, _ = carry_then_open(env)
    inter = ExpertIntervener(env, mode="rac")
    flags, info = session(env, inter, drop)
    assert inter.takeovers[0][1] == "regressed"
    assert "R" not in flags and "C" in flags  # retracing the arm cannot undo a drop: no rewind
    # The correction finishes what the policy had reached (carrying the cube), not only the re-grasp.
    assert inter.target_subtask == "place_cube"
    assert info["success"] and flags.endswith("C")


def test_a_flickering_subtask_report_is_not_a_regression(env):
    """Contact-based reports flicker while a cube is held loosely: only a fall back that lasts
    `regress_patience` steps is a regression."""
    expert = NativePickPlaceExpert(env)
    obs, info = env.reset(seed=1)
    expert.reset(1)
    inter = ExpertIntervener(env, mode="hg_dagger", regress_patience=4)
    while not info["subtasks_done"]:  # the expert picks the cube
        assert not inter.wants_control(obs, info)
        obs, _, _, _, info = env.step(expert.act(obs))
    assert not inter.wants_control(obs, info)
    flicker = {**info, "subtask": "pick_cube", "subtasks_done": []}
    for _ in range(3):
        assert not inter.wants_control(obs, flicker)
    assert not inter.wants_control(obs, info)  # back to held: the count starts again
    for _ in range(3):
        assert not inter.wants_control(obs, flicker)
    assert inter.wants_control(obs, flicker)
    assert [reason for _, reason in inter.takeovers] == ["regressed"]
    with pytest.raises(ValueError, match="regress_patience"):
        ExpertIntervener(env, regress_patience=0)


def test_hg_dagger_takes_over_without_rewind_and_hands_back(env):
    inter = ExpertIntervener(env, mode="hg_dagger")
    flags, _ = session(env, inter, good_then(env, lambda *_: DRIFT, 12), steps=120)
    assert "R" not in flags
    first_c = flags.index("C")
    handback = flags.index("p", first_c)  # control returned to the policy after the correction
    assert set(flags[first_c:handback]) == {"C"}
    assert not inter.episode_done


def test_disagreement_threshold_triggers_early(env):
    inter = ExpertIntervener(env, mode="rac", disagreement_threshold=0.8)
    flags, _ = session(env, inter, good_then(env, lambda *_: DRIFT, 12))
    assert flags.startswith("p" * 12) and "R" in flags
    step, reason = inter.takeovers[0]
    assert reason == "disagreement"
    assert step <= 12 + inter.disagreement_window + 1  # before the gripper drifts off plan


def test_requested_takeover(env):
    inter = ExpertIntervener(env, mode="hg_dagger")
    obs, info = env.reset(seed=0)
    assert not inter.wants_control(obs, info)
    inter.request_takeover()
    assert inter.wants_control(obs, info) and inter.takeovers[-1][1] == "requested"


def test_rac_on_stack3_corrects_the_subtask_current_at_takeover():
    env = TASKS.make("stack3", cameras=(), obs_mode="state")
    expert = NativePickPlaceExpert(env)
    expert.reset(1)
    state = {"bad": False}

    def policy(t, obs, info):
        state["bad"] = state["bad"] or info["subtask"] == "pick_blue"
        return DRIFT if state["bad"] else expert.act(obs)

    inter = ExpertIntervener(env, mode="rac")
    flags, info = session(env, inter, policy, steps=400)
    # Drifting sideways from the freshly placed green cube either sweeps the tower over (the task
    # regresses to pick_green) or leaves the corridor to the blue cube.
    reason = inter.takeovers[0][1]
    assert reason in ("off_plan", "regressed")
    if reason == "off_plan":  # the arm's own drift is rewound; a knocked-over tower is not
        assert "R" in flags and flags.rstrip("C").endswith("R")
    else:
        assert "R" not in flags
    assert inter.episode_done and not inter.correction_failed
    assert inter.target_subtask in ("pick_green", "pick_blue")
    assert inter.target_subtask in info["subtasks_done"]


def test_quaternion_matches_the_env_rotation(env):
    env.reset(seed=0)
    for _ in range(5):
        env.step(np.array([0.3, -0.2, 0.1, 0.8, -0.5, 0.6, 0], np.float32))
    np.testing.assert_allclose(quat_xyzw_to_mat(env.eef_quat()), env.eef_mat(), atol=1e-6)


def test_works_on_a_robosuite_task_with_its_expert():
    pytest.importorskip("robosuite")
    if "lift" not in TASKS.names():
        pytest.skip("robosuite tasks not registered")
    from sim.policies import make_expert

    env = TASKS.make("lift", cameras=(), obs_mode="state")
    good = make_expert(env)
    good.reset(1)
    inter = ExpertIntervener(env, expert=make_expert(env), mode="rac")
    flags, info = session(env, inter, lambda t, obs, info: good.act(obs, info)[0] if t < 12 else DRIFT,
                          steps=300)
    assert inter.takeovers[0][1] == "off_plan"
    assert "R" in flags and flags.rstrip("C").endswith("R")
    # Corrected the sub-task current at takeover: the robosuite task moved past it.
    assert inter.episode_done and not inter.correction_failed and info["subtask"] != inter.target_subtask


def test_release_guard_takes_over_before_the_policy_lets_go_of_a_held_cube(env):
    """The policy carries the cube (the expert's moves) and opens the gripper halfway to the goal:
    with the guard the person takes over on that very step, before the cube falls, and finishes the
    place; without it the takeover comes later, as a regression, after the drop."""
    policy, state = carry_then_open(env)
    inter = ExpertIntervener(env, mode="hg_dagger", release_guard=True)
    flags, info = session(env, inter, policy)
    reason = inter.takeovers[0][1]
    assert reason == "release" and flags[state["opened_at"]] == "C"  # the opening step never ran
    assert inter.target_subtask == "place_cube" and info["success"]
    policy, state = carry_then_open(env)
    inter = ExpertIntervener(env, mode="hg_dagger")
    session(env, inter, policy)
    assert inter.takeovers[0][1] == "regressed" and inter.takeovers[0][0] > state["opened_at"] + 1


def test_release_guard_stays_out_of_an_expert_episode(env):
    """The expert's own release at the goal is no takeover: it agrees with itself."""
    expert = NativePickPlaceExpert(env)
    expert.reset(1)
    inter = ExpertIntervener(env, mode="hg_dagger", release_guard=True)
    flags, info = session(env, inter, lambda t, obs, info: expert.act(obs))
    assert info["success"] and set(flags) == {"p"} and inter.takeovers == []


def test_intervener_args_from_a_typed_config_get_the_keywords_types() -> None:
    from sim.eval_worker import intervener_args

    args = intervener_args({"intervener_args": {"release_guard": 1.0, "subtask_timeout": 8.0,
                                                "disagreement_threshold": 0.5}})
    assert args == {"release_guard": True, "subtask_timeout": 8, "disagreement_threshold": 0.5}
    assert type(args["release_guard"]) is bool and type(args["subtask_timeout"]) is int


def straight_down_grasp(env):
    """A policy that goes down onto the cube and closes without turning the hand to it."""
    def policy(t, obs, info):
        cube = env.unwrapped.cube_pos()
        target = cube + np.array([0.0, 0.0, 0.008])
        d = target - env.unwrapped.eef_pos()
        if np.linalg.norm(d[:2]) > 0.01:
            d[2] = max(d[2], 0.0)  # over the cube first
        move = np.clip(d / 0.05 * 1.5, -1, 1)
        grip = 1.0 if np.linalg.norm(d) < 0.012 else -1.0
        return np.array([*move, 0, 0, 0, grip], np.float32)
    return policy


def test_grasp_yaw_guard_stops_a_crooked_grasp_and_the_expert_turns_the_hand(env):
    from sim.intervener import grasp_yaw_error

    env.reset(seed=3)
    assert grasp_yaw_error(env.unwrapped) > 30  # this seed's cube sits far off the hand's yaw
    inter = ExpertIntervener(env, mode="hg_dagger", grasp_yaw_guard=25.0)
    flags, info = session(env, inter, straight_down_grasp(env), seed=3, steps=120)
    at, reason = inter.takeovers[0]
    assert reason == "crooked_grasp" and flags[:at - 1] == "p" * (at - 1)
    assert "C" in flags and "pick_cube" in info["subtasks_done"]  # the expert turned and grasped
    # without the guard the same policy closes crooked: no takeover until something else fails
    inter = ExpertIntervener(env, mode="hg_dagger")
    session(env, inter, straight_down_grasp(env), seed=3, steps=30)
    assert all(r != "crooked_grasp" for _, r in inter.takeovers)


def test_grasp_yaw_guard_leaves_an_aligned_grasp_alone(env):
    expert = NativePickPlaceExpert(env)
    expert.reset(3)
    inter = ExpertIntervener(env, mode="hg_dagger", grasp_yaw_guard=25.0)
    _, info = session(env, inter, lambda t, obs, info: expert.act(obs), seed=3)
    assert info["success"] and inter.takeovers == []


def test_label_is_the_experts_action_from_the_state_and_leaves_its_memory_alone(env):
    """DAgger's label: what the expert would do if it took over here; asking changes nothing."""
    obs, info = env.reset(seed=1)
    inter = ExpertIntervener(env, mode="hg_dagger")
    inter.expert.reset(1)
    for _ in range(6):  # the policy drifts away from the cube
        obs, _, _, _, info = env.step(DRIFT)
    info["policy_action"] = DRIFT
    def memory() -> dict[str, str]:
        return {k: repr(v.bit_generator.state if isinstance(v, np.random.Generator) else v)
                for k, v in vars(inter.expert).items() if k != "env"}

    before = memory()
    label = inter.label(obs, info)
    assert memory() == before
    fresh = NativePickPlaceExpert(env)
    fresh.reset(1)
    fresh.sync()
    np.testing.assert_array_equal(label, fresh.act(obs))
    back = task_view(env.unwrapped)[0][:2] - env.unwrapped.eef_pos()[:2]
    assert float(label[:2] @ back) > 0 and label[-1] < 0  # back towards the cube, gripper open
    turning = np.array([0, 0, 0, 0.1, -0.2, 0.3, -1], np.float32)
    keep = ExpertIntervener(env, mode="hg_dagger", label_rotation=False)
    kept = keep.label(obs, {**info, "policy_action": turning})
    np.testing.assert_array_equal(kept[3:6], turning[3:6])  # the policy's own rotation
    np.testing.assert_array_equal(kept[[0, 1, 2, 6]], label[[0, 1, 2, 6]])  # the expert's translation and gripper
    untilted = ExpertIntervener(env, mode="hg_dagger", label_tilt=False).label(obs, {**info, "policy_action": turning})
    np.testing.assert_array_equal(untilted[3:5], turning[3:5])  # the policy's roll and pitch
    np.testing.assert_array_equal(untilted[[0, 1, 2, 5, 6]], label[[0, 1, 2, 5, 6]])  # the expert's yaw
    staying = ExpertIntervener(env, mode="hg_dagger", label_retreat=False)
    staying.label(obs, info)
    assert staying.expert.retreat  # the label's setting does not stick to the expert that takes over


def test_the_persons_expert_takes_the_demos_gain_and_the_intervener_keeps_its_own_keywords() -> None:
    from sim.intervener import intervener_args, intervener_expert_options

    spec = {"intervener_args": {"expert_gain": 0.7, "subtask_timeout": 40}}
    assert intervener_expert_options(spec) == {"gain": 0.7}
    assert intervener_args(spec) == {"subtask_timeout": 40}
    assert intervener_expert_options({"intervener_args": {}}) == {}
    with pytest.raises(ValueError, match=r"unknown intervener_args.*expert_gain"):
        intervener_args({"intervener_args": {"expert_gian": 0.7}})
