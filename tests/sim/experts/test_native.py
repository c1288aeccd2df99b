import numpy as np
import pytest

from sim.experts.native import NativePickPlaceExpert
from vla.registry import TASKS


def run(env, expert, seed):
    obs, info = env.reset(seed=seed)
    expert.reset(seed)
    for t in range(env.unwrapped.horizon):
        obs, _, term, trunc, info = env.step(expert.act(obs))
        if term or trunc:
            return info["success"], t + 1
    return info["success"], env.unwrapped.horizon


@pytest.mark.parametrize("task", ["pick_place", "stack3"])
def test_expert_succeeds_on_ten_seeds(task):
    env = TASKS.make(task, cameras=(), obs_mode="state")
    expert = NativePickPlaceExpert(env)
    results = [run(env, expert, s) for s in range(100, 110)]
    assert sum(ok for ok, _ in results) >= 9


def test_low_skill_is_slower_but_still_mostly_succeeds():
    env = TASKS.make("pick_place", cameras=(), obs_mode="state")
    good = [run(env, NativePickPlaceExpert(env), s) for s in range(8)]
    sloppy = [run(env, NativePickPlaceExpert(env, skill=0.3, noise=0.1), s) for s in range(8)]
    assert np.mean([n for _, n in sloppy]) > 1.3 * np.mean([n for _, n in good])
    assert sum(ok for ok, _ in sloppy) >= 5


def test_expert_takes_over_from_a_disturbed_state():
    env = TASKS.make("pick_place", cameras=(), obs_mode="state")
    obs, _ = env.reset(seed=5)
    rng = np.random.default_rng(0)
    for _ in range(20):  # a random policy wanders off and closes the gripper
        env.step(np.concatenate([rng.uniform(-1, 1, 6), [1.0]]).astype(np.float32))
    expert = NativePickPlaceExpert(env)
    expert.sync()
    for _ in range(180):
        obs, _, term, _, info = env.step(expert.act(obs))
        if term:
            break
    assert info["success"]


def test_bad_parameters_raise():
    env = TASKS.make("pick_place", cameras=())
    with pytest.raises(ValueError, match="skill"):
        NativePickPlaceExpert(env, skill=1.5)
    with pytest.raises(ValueError, match="noise"):
        NativePickPlaceExpert(env, noise=-0.1)
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError, match="rot_speed"):
            NativePickPlaceExpert(env, rot_speed=bad)
    for bad in (-0.1, 1.1):
        with pytest.raises(ValueError, match="drop must be a probability"):
            NativePickPlaceExpert(env, drop=bad)
    for bad in (0.0, 3.5):
        with pytest.raises(ValueError, match="gain must be in"):
            NativePickPlaceExpert(env, gain=bad)


def test_a_gain_below_one_keeps_the_expert_steady_when_its_commands_arrive_a_step_late():
    """The default gain overshoots every step; a step of latency makes that loop ring (e_t+1 = e_t - k e_t-1):
    slow at one step, failing at two. Below 1 the expert is as quick late as on time."""
    from sim.perturb import perturbed

    def lengths(gain, spec):
        env = perturbed(TASKS.make("pick_place", cameras=(), obs_mode="state"), spec, "state")
        return [run(env, NativePickPlaceExpert(env, gain=gain), s) for s in range(4)]

    fast, ringing, failing = lengths(None, "none"), lengths(None, "action_latency:1"), lengths(None, "action_latency:2")
    assert all(ok for ok, _ in fast) and not any(ok for ok, _ in failing)
    assert np.mean([n for _, n in ringing]) > 1.4 * np.mean([n for _, n in fast])
    steady, late = lengths(0.7, "none"), lengths(0.7, "action_latency:1")
    assert all(ok for ok, _ in steady + late)
    assert np.mean([n for _, n in late]) < 1.1 * np.mean([n for _, n in steady])


@pytest.mark.parametrize("task", ["pick_place", "sort"])
def test_a_drop_lets_go_of_the_carried_object_once_and_the_expert_picks_it_up_again(task):
    """drop=1: the executed gripper opens while the object is carried (its label, clean_action, stays
    closed), the object falls to the table, the hand closes on nothing for a while, and the expert
    goes back, grasps it again and finishes; drop=0 never opens mid-carry."""
    env = TASKS.make(task, cameras=(), obs_mode="state")
    u = env.unwrapped
    dropped = 0
    for seed in range(4):
        obs, info = env.reset(seed=seed)
        expert = NativePickPlaceExpert(env, drop=1.0, seed=seed)
        forced, fell = 0, False
        for _ in range(env.horizon):
            a = expert.act(obs)
            forced += a[6] != expert.clean_action[6]
            obs, _, term, trunc, info = env.step(a)
            p = u.privileged()
            fell |= forced > 0 and p["objects"][p["active_object"]]["pos"][2] < 0.025
            if term or trunc:
                break
        assert info["success"]
        if expert.dropped:
            dropped += 1
            assert fell and forced >= 3  # it reached the table; the forced opening was never the label
    assert dropped >= 3
    obs, _ = env.reset(seed=0)
    expert = NativePickPlaceExpert(env, drop=0.0, seed=0)
    for _ in range(env.horizon):
        a = expert.act(obs)
        assert a[6] == expert.clean_action[6]
        obs, _, term, trunc, _ = env.step(a)
        if term or trunc:
            break
    assert not expert.dropped


def test_a_drift_pushes_the_descending_hand_beside_the_object_and_the_expert_centres_before_it_grasps():
    """drift=1: near grasp height the executed motion is pushed sideways for DRIFT_STEPS steps (the labels,
    clean_action, never carry the push); the hand ends up centimetres beside the cube, below hover height, and
    the expert centres there and finishes. drift=0 executes its labels."""
    from sim.experts.native import DRIFT_STEPS

    env = TASKS.make("pick_place", cameras=(), obs_mode="state")
    u = env.unwrapped
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        expert = NativePickPlaceExpert(env, drift=1.0, gain=0.7, seed=seed)
        pushed, worst = 0, 0.0
        for _ in range(env.horizon):
            a = expert.act(obs)
            pushed += bool(np.any(a[:2] != expert.clean_action[:2]))
            obs, _, term, trunc, info = env.step(a)
            cube = u.privileged()["objects"]["cube"]["pos"]
            if u.eef_pos()[2] < cube[2] + 0.1 and not u.is_grasped(u.privileged()["objects"]["cube"]["geom"]):
                worst = max(worst, float(np.linalg.norm(u.eef_pos()[:2] - cube[:2])))
            if term or trunc:
                break
        assert info["success"] and pushed == DRIFT_STEPS and worst > 0.015
    obs, _ = env.reset(seed=0)
    expert = NativePickPlaceExpert(env, drift=0.0, gain=0.7, seed=0)
    for _ in range(env.horizon):
        a = expert.act(obs)
        assert np.array_equal(a, expert.clean_action)
        obs, _, term, trunc, _ = env.step(a)
        if term or trunc:
            break
    with pytest.raises(ValueError, match="drift must be a probability"):
        NativePickPlaceExpert(env, drift=1.5)


def _tilt(u) -> float:
    """The angle (rad) between the hand's axis and straight down."""
    return float(np.arccos(np.clip(-u.eef_mat()[2, 2], -1.0, 1.0)))


def test_rotation_noise_tilts_the_executed_hand_and_the_clean_labels_turn_it_back():
    """rot_noise: the executed rotation carries the noise (translation and gripper do not), the hand tilts
    further off straight down than the arm's own motion tilts it, and the labels (clean_action) turn it
    back: their tilt command opposes the tilt it has. Either way the expert finishes."""
    env = TASKS.make("pick_place", cameras=(), obs_mode="state")
    u = env.unwrapped
    tilts, corrections = {}, {}
    for rot_noise in (0.0, 0.05):
        obs, _ = env.reset(seed=1)
        expert = NativePickPlaceExpert(env, rot_noise=rot_noise, gain=0.7, seed=1)
        tilt, opposes = [], []
        for _ in range(env.horizon):
            a = expert.act(obs)
            assert np.array_equal(a[[0, 1, 2, 6]], expert.clean_action[[0, 1, 2, 6]])
            assert (not np.array_equal(a[3:6], expert.clean_action[3:6])) == (rot_noise > 0)
            down = u.eef_mat()[:, 2]  # the hand's z axis points down when it is upright
            axis = np.cross(down, [0.0, 0.0, -1.0])  # the world rotation vector that rights it
            if _tilt(u) > 0.005:
                opposes.append(float(np.dot(expert.clean_action[3:5], axis[:2])) > 0)
            tilt.append(_tilt(u))
            obs, _, term, trunc, info = env.step(a)
            if term or trunc:
                break
        assert info["success"]
        tilts[rot_noise], corrections[rot_noise] = float(np.mean(tilt)), opposes
    assert tilts[0.05] > 2 * tilts[0.0]
    assert len(corrections[0.05]) > 20 and np.mean(corrections[0.05]) > 0.9
    with pytest.raises(ValueError, match="rot_noise must be a fraction of full scale"):
        NativePickPlaceExpert(env, rot_noise=-0.1)


def test_drops_draw_from_their_own_stream_so_noisy_demos_stay_the_same_until_the_drop():
    """The noise and skill draws do not depend on `drop`: a noisy expert with and without drops acts
    identically up to the step its hand is forced open (demos collected before drops existed stay
    reproducible)."""
    env = TASKS.make("pick_place", cameras=(), obs_mode="state")
    runs = []
    for drop in (0.0, 1.0):
        obs, _ = env.reset(seed=7)
        expert = NativePickPlaceExpert(env, noise=0.1, drop=drop, seed=7)
        acts = []
        for _ in range(env.horizon):
            a = expert.act(obs)
            acts.append((a, a[6] != expert.clean_action[6]))
            obs, _, term, trunc, _ = env.step(a)
            if term or trunc:
                break
        runs.append(acts)
    forced_at = next(i for i, (_, forced) in enumerate(runs[1]) if forced)
    assert forced_at > 10
    np.testing.assert_array_equal(np.array([a for a, _ in runs[0][:forced_at]]),
                                  np.array([a for a, _ in runs[1][:forced_at]]))


def test_a_rotation_cap_spreads_the_turn_over_the_approach_and_still_succeeds():
    """With rot_speed the hand turns to the cube over several steps (the states a camera policy must
    learn the turn from), never faster than the cap, and the episodes still succeed."""
    env = TASKS.make("pick_place", cameras=(), obs_mode="state")
    turning = {}
    for cap in (None, 0.15):
        steps = []
        for seed in range(6):
            obs, info = env.reset(seed=seed)
            expert = NativePickPlaceExpert(env, rot_speed=cap)
            expert.reset(seed)
            n = 0
            for _ in range(env.horizon):
                a = expert.act(obs)
                assert cap is None or np.abs(a[3:6]).max() <= cap + 1e-6
                n += abs(a[5]) > 0.05
                obs, _, term, trunc, info = env.step(a)
                if term or trunc:
                    break
            assert info["success"]
            steps.append(n)
        turning[cap] = np.mean(steps)
    assert turning[0.15] > 1.5 * turning[None]


@pytest.mark.parametrize("task", ["pick_place", "sort"])
def test_a_late_turn_keeps_the_hands_yaw_until_it_hovers_over_the_object(task):
    """turn_late: no rotation while the hand is away from the object; the whole turn happens over it
    (where the wrist camera sees the object's edges against the pads), and the grasps still succeed."""
    from sim.experts.native import LATE_TURN_XY
    from sim.intervener import task_view

    env = TASKS.make(task, cameras=(), obs_mode="state")
    over = []
    for seed in range(4):
        obs, info = env.reset(seed=seed)
        expert = NativePickPlaceExpert(env, turn_late=True, rot_speed=0.3)
        expert.reset(seed)
        turned_far, turned_over = 0, 0
        for _ in range(env.horizon):
            pos, _, held = task_view(env)
            a = expert.act(obs)
            if not held and expert._grip < 0:
                far = np.linalg.norm(env.eef_pos()[:2] - pos[:2]) > LATE_TURN_XY + 0.01
                turning = np.abs(expert.clean_action[3:6]).max() > 0.05
                turned_far += far and turning
                turned_over += (not far) and turning
            obs, _, term, trunc, info = env.step(a)
            if term or trunc:
                break
        assert info["success"], seed
        assert turned_far == 0, seed
        over.append(turned_over)
    assert sum(over) >= 8  # the turn happened, over the object (capped at 0.3: several steps a turn)


def test_unskilled_expert_misses_grasps_and_retries():
    env = TASKS.make("pick_place", cameras=(), obs_mode="state")
    expert = NativePickPlaceExpert(env, skill=0.0)
    closes, wins = [], 0
    for seed in range(6):
        obs, info = env.reset(seed=seed)
        expert.reset(seed)
        n_close, last = 0, -1.0
        for _ in range(env.horizon):
            action = expert.act(obs)
            n_close += int(action[6] > 0 and last <= 0)
            last = action[6]
            obs, _, term, trunc, info = env.step(action)
            if term or trunc:
                break
        closes.append(n_close)
        wins += info["success"]
    assert max(closes) >= 2  # at least one grasp attempt missed and was retried
    assert wins >= 4


def test_sync_with_a_closing_hint_keeps_closing_only_on_a_centred_cube():
    """A takeover (or a DAgger label) while someone closes the gripper: on a cube centred between the
    pads the expert closes on it in place; off centre it opens to approach again."""
    env = TASKS.make("pick_place", cameras=(), obs_mode="state")
    expert = NativePickPlaceExpert(env)
    obs, _ = env.reset(seed=5)
    expert.reset(5)
    for _ in range(env.horizon):  # the expert's own approach, up to where it starts closing
        a = expert.act(obs)
        if a[-1] > 0:
            break
        obs, *_ = env.step(a)
    obs, *_ = env.step(a)  # the fingers start to close, the cube not held yet
    other = NativePickPlaceExpert(env)
    other.sync(closing=True)
    a = other.act(obs)
    assert a[-1] > 0 and np.abs(a[:3]).max() < 1e-6  # keep closing, do not move
    other.sync()  # no hint: half-closed fingers on a cube not held read as "open and approach again"
    assert other.act(obs)[-1] < 0
    side = env.unwrapped.eef_mat()[:2, 1]  # the hand's y: across the pads, nothing to push
    for _ in range(2):
        obs, *_ = env.step(np.array([*(0.4 * side / np.linalg.norm(side)), 0, 0, 0, 0, -1], np.float32))
    other.sync(closing=True)
    assert other.act(obs)[-1] < 0  # 2 cm off centre: open, do not close on it


def test_without_retreat_the_expert_centres_at_the_hands_height_instead_of_climbing_to_hover():
    env = TASKS.make("pick_place", cameras=(), obs_mode="state")
    expert = NativePickPlaceExpert(env)
    obs, _ = env.reset(seed=5)
    expert.reset(5)
    for _ in range(env.horizon):  # down to where the expert starts closing
        a = expert.act(obs)
        if a[-1] > 0:
            break
        obs, *_ = env.step(a)
    side = env.unwrapped.eef_mat()[:2, 1]
    for _ in range(2):  # 2 cm off centre, across the pads
        obs, *_ = env.step(np.array([*(0.4 * side / np.linalg.norm(side)), 0, 0, 0, 0, -1], np.float32))
    other = NativePickPlaceExpert(env)
    climb = other.act(obs)
    other.retreat = False
    centre = other.act(obs)
    assert climb[2] > 0.99  # back up to hover height first
    assert centre[2] < 0.7 * climb[2]  # at most a couple of centimetres up
    cube = env.unwrapped.privileged()["objects"][env.unwrapped.privileged()["active_object"]]["pos"]
    assert float(centre[:2] @ (cube[:2] - env.unwrapped.eef_pos()[:2])) > 0  # towards the cube
