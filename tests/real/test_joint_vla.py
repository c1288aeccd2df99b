"""Joint-space VLA adapter on the real native-arm model: FK matches the simulator's proprio, the IK
step is the simulator's, EE deltas -> joint targets -> FK deltas round-trips, the prefix reaches the
VLA in its own action space, and a real (fresh-weights) tiny VLA checkpoint runs through the factory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from real.joint_vla import (
    JOINT_NAMES,
    ArmKinematics,
    JointSpaceVLA,
    make_joint_vla,
    resolve_policy_folder,
)
from sim.tasks.native.pick_place import PickPlaceEnv
from vla.robot.arm import CONTROL_DT, FINGER_MAX, HOME_QPOS

CAMERAS = ("agentview", "robot0_eye_in_hand")


def build_tiny_checkpoint(path: Path, image_size: int = 84, state_quats: tuple[int, ...] = (3,),
                          groups: list[tuple[str, ...]] | None = None, objects: bool = False) -> Path:
    """A real VLAModel checkpoint for the native pick_place interface (2 cameras, 9-d proprio, 7-d
    EE actions), fresh weights and plausible statistics; saved with the repo's checkpoint code.
    `state_quats=()` is a checkpoint from before the quaternion's 6D features; `groups`: the training
    phrasings it carries (none by default, as a checkpoint from before they were saved); `objects`: the
    13 object features of obs_mode=state follow the proprio (22-d state, the cube's quaternion too)."""
    from vla.data.stats import ByteHistogramStats, RunningStats
    from vla.policy.checkpoint import save_checkpoint
    from vla.policy.config import load_policy_config
    from vla.policy.model import VLAModel

    rng = np.random.default_rng(0)
    if objects and state_quats:
        state_quats = (*state_quats, 12)
    cfg = load_policy_config("tiny", cameras=list(CAMERAS), state_dim=22 if objects else 9, action_dim=7, d_model=32,
                             n_heads=2, trunk_layers=1, expert_layers=1, image_size=(32, 32), vision_channels=(8, 16),
                             num_steps=4, state_quats=state_quats)
    stats = {}
    state = np.concatenate([rng.normal([0.0, 0.0, 0.2], 0.1, (512, 3)), rng.normal(0, 0.5, (512, 4)),
                            rng.uniform(0, FINGER_MAX, (512, 1)), -rng.uniform(0, FINGER_MAX, (512, 1))], axis=1)
    if objects:  # cube position, quaternion, cube - hand, zone position
        state = np.concatenate([state, rng.normal(0, 0.1, (512, 3)), rng.normal(0, 0.5, (512, 4)),
                                rng.normal(0, 0.1, (512, 6))], axis=1)
    for key, rows in (("state", state), ("action", rng.uniform(-0.3, 0.3, (512, 7)))):
        acc = RunningStats(rows.shape[1])
        acc.update(rows)
        stats[key] = acc.finish()
    for cam in CAMERAS:
        hist = ByteHistogramStats(3)
        hist.update(rng.integers(0, 256, (4096, 3), dtype=np.uint8))
        stats[f"images/{cam}"] = hist.finish()
    model = VLAModel(cfg, stats)
    model.language.encode(list(PickPlaceEnv.INSTRUCTIONS))  # cached in the checkpoint
    model.instruction_groups = list(groups or [])
    return save_checkpoint(path, model, stats)


@pytest.fixture(scope="module")
def kin() -> ArmKinematics:
    return ArmKinematics()


def joints_of(env: PickPlaceEnv) -> np.ndarray:
    return np.append(env.arm_qpos(), env.finger_qpos().mean())


def test_proprio_matches_the_simulator(kin: ArmKinematics) -> None:
    env = PickPlaceEnv(cameras=())
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=3)
    for _ in range(12):
        np.testing.assert_allclose(kin.proprio(joints_of(env))[:7], obs["state"][:7], atol=1e-5)
        obs, *_ = env.step(rng.uniform(-1, 1, 7))


def test_ik_step_is_the_simulators(kin: ArmKinematics) -> None:
    env = PickPlaceEnv(cameras=())
    rng = np.random.default_rng(1)
    env.reset(seed=1)
    for _ in range(5):
        a = rng.uniform(-1, 1, 7)
        q = env.arm_qpos()
        ctrl_before = env.data.ctrl.copy()
        env._apply_action(a)
        np.testing.assert_allclose(kin.ee_to_joints(q, a[None])[0, :7], env.data.ctrl[:7], atol=1e-12)
        assert env.data.ctrl[7] == pytest.approx(kin.ee_to_joints(q, a[None])[0, 7])
        env.data.ctrl[:] = ctrl_before
        env.step(a)


@pytest.mark.parametrize("start", ["home", "reached"])
def test_ee_joint_round_trip(kin: ArmKinematics, start: str) -> None:
    """EE deltas -> joint targets -> FK deltas ~= the original (moderate actions inside the workspace:
    the remaining error is the linearisation of one damped IK step)."""
    rng = np.random.default_rng(2)
    q0 = HOME_QPOS if start == "home" else kin.ee_to_joints(HOME_QPOS, rng.uniform(-0.4, 0.4, (10, 7)))[-1, :7]
    a = rng.uniform(-0.4, 0.4, (16, 7))
    a[:, 3:6] *= 0.3
    joints = kin.ee_to_joints(q0, a)
    assert joints.shape == (16, 8)
    back = kin.joints_to_ee(q0, joints)
    np.testing.assert_allclose(back, a, atol=0.03)
    # the gripper channel is exact
    np.testing.assert_allclose(back[:, 6], a[:, 6], atol=1e-12)


def test_full_speed_steps_round_trip_within_a_tenth(kin: ArmKinematics) -> None:
    a = np.zeros((4, 7))
    a[:, 0] = 1.0  # 5 cm per step along x, from home (well inside the reach; near it the error grows)
    back = kin.joints_to_ee(HOME_QPOS, kin.ee_to_joints(HOME_QPOS, a))
    assert np.abs(back - a).max() < 0.1


class RecordingEEPolicy:
    """Stands in for the VLA: records what it is given, returns `prefix + fixed` EE chunks."""

    def __init__(self, horizon: int = 16) -> None:
        self.horizon, self.calls = horizon, []
        self.chunk = np.tile(np.array([0.2, -0.1, 0.1, 0.0, 0.0, 0.05, -1.0], np.float32), (horizon, 1))

    def sample_chunk(self, obs_batch, prefix=None, guidance=None):
        self.calls.append({"state": obs_batch[0]["state"], "prefix": prefix, "images": obs_batch[0]["images"]})
        out = self.chunk[None].copy()
        if prefix is not None:
            out[:, : prefix.shape[1]] = prefix
        if guidance is not None:
            out = out + guidance(out.copy(), 1.0)
        return out

    def reset(self) -> None:
        pass


def joint_obs(q: np.ndarray) -> dict:
    img = np.zeros((84, 84, 3), np.uint8)
    return {"images": {c: img for c in CAMERAS}, "state": q.astype(np.float32), "instruction": "x",
            "timestamp": 0.0}


def test_adapter_prefix_goes_back_to_ee_space(kin: ArmKinematics) -> None:
    ee = RecordingEEPolicy()
    pol = JointSpaceVLA(ee, kin)
    q = np.append(HOME_QPOS, FINGER_MAX)
    first = pol.sample_chunk([joint_obs(q)])
    assert first.shape == (1, 16, 8) and first.dtype == np.float32
    np.testing.assert_allclose(ee.calls[0]["state"][:3], kin.pose(HOME_QPOS)[0], atol=1e-6)
    lo, hi = kin.lower, kin.upper
    assert np.all(first >= lo) and np.all(first <= hi)  # inside the ranges after the float32 cast
    # aligned mode: the committed joint prefix reaches the VLA as (about) the EE deltas that made it
    prefix = first[:, :4]
    second = pol.sample_chunk([joint_obs(q)], prefix=prefix)
    np.testing.assert_allclose(ee.calls[1]["prefix"][0], ee.chunk[:4], atol=1e-6)  # the EE actions it issued
    np.testing.assert_array_equal(second[:, :4], prefix)  # committed actions stay exact
    # and the rest continues from where the prefix leaves the arm, not from the observation
    np.testing.assert_allclose(second[0, 4:], kin.rollout(q, ee.chunk[4:], prefix=prefix[0]), atol=1e-5)
    # a prefix it did not issue (another policy's targets) goes back by FK differences
    foreign = kin.ee_to_joints(HOME_QPOS, ee.chunk[:4] * 0.5)[None].astype(np.float32)
    pol.sample_chunk([joint_obs(q)], prefix=foreign)
    np.testing.assert_allclose(ee.calls[2]["prefix"][0], ee.chunk[:4] * 0.5, atol=0.03)


def test_rollout_targets_move_the_arm_as_the_simulators_ee_steps(kin: ArmKinematics) -> None:
    """A chunk sent as joint targets (the robot path) moves the end effector as the simulator moves
    it for the same EE deltas applied step by step at the measured pose (the policy's training)."""
    rng = np.random.default_rng(4)
    actions = np.clip(rng.normal(0, 0.6, (16, 7)), -1, 1)
    actions[:, 3:6] *= 0.2

    def gap(targets_of) -> float:
        sim, robot = PickPlaceEnv(cameras=()), PickPlaceEnv(cameras=())
        sim.reset(seed=5)
        robot.reset(seed=5)
        targets = targets_of(robot)
        far = []
        for a, t in zip(actions, targets, strict=True):
            sim.step(a)
            robot.step_joints(t[:7], float(np.clip(t[7], 0.0, FINGER_MAX)))
            far.append(np.linalg.norm(sim.eef_pos() - robot.eef_pos()))
        return max(far)

    assert gap(lambda robot: kin.rollout(joints_of(robot), actions)) < 1e-3
    # Integrating the IK from the previous target (a stiff arm) runs ahead of the lagging arm.
    assert gap(lambda robot: kin.ee_to_joints(robot.arm_qpos(), actions)) > 0.05


def test_rollout_from_a_moving_arm_starts_from_its_velocity_and_current_command(kin: ArmKinematics) -> None:
    """Mid-chunk (the executor's aligned mode) the arm is moving and already has its next command:
    the rollout that starts from the measured velocities and runs that command first reproduces the
    simulator's EE stepping; one that starts at rest falls behind."""
    rng = np.random.default_rng(4)
    actions = np.clip(rng.normal(0, 0.6, (22, 7)), -1, 1)
    actions[:, 3:6] *= 0.2
    history, chunk = actions[:6], actions[6:]

    def gap(from_state: bool) -> float:
        sim, robot = PickPlaceEnv(cameras=()), PickPlaceEnv(cameras=())
        sim.reset(seed=5)
        robot.reset(seed=5)
        for a in history:
            sim.step(a)
            robot.step(a)
        q, v = joints_of(robot), np.append(robot.arm_qvel(), robot.finger_qvel().mean())
        assert np.linalg.norm(v[:7]) > 0.5  # the arm is moving
        command = kin.ee_to_joints(robot.arm_qpos(), chunk[:1])[0]  # the simulator's IK step at this pose
        targets = (kin.rollout(q, chunk[1:], velocity=v, command=command) if from_state
                   else kin.rollout(q, chunk[1:]))
        far = []
        for a, t in zip(chunk, [command, *targets], strict=True):
            sim.step(a)
            robot.step_joints(t[:7], float(np.clip(t[7], 0.0, FINGER_MAX)))
            far.append(np.linalg.norm(sim.eef_pos() - robot.eef_pos()))
        return max(far)

    assert gap(from_state=True) < 1e-4
    assert gap(from_state=False) > 0.01


def test_adapter_puts_the_current_command_ahead_of_the_prefix(kin: ArmKinematics) -> None:
    ee = RecordingEEPolicy()
    pol = JointSpaceVLA(ee, kin)
    q = np.append(HOME_QPOS, FINGER_MAX)
    first = pol.sample_chunk([joint_obs(q)])
    moving = {**joint_obs(q), "velocity": np.full(8, 0.1, np.float32), "command": first[0, 0]}
    second = pol.sample_chunk([moving], prefix=first[:, 1:4])
    # The VLA sees the command as the first committed action (it runs right after the observation)...
    np.testing.assert_allclose(ee.calls[1]["prefix"][0], ee.chunk[:4], atol=1e-6)
    # ...and its row for the command is not returned: the chunk still starts at the next tick.
    assert second.shape == (1, 15, 8)
    np.testing.assert_array_equal(second[:, :3], first[:, 1:4])
    v, c = moving["velocity"], moving["command"]
    np.testing.assert_allclose(second[0, 3:], kin.rollout(q, ee.chunk[4:], prefix=first[0, 1:4], velocity=v,
                                                          command=c), atol=1e-5)
    # Without a prefix the command still runs first in the rollout, and the whole chunk comes back.
    third = pol.sample_chunk([moving])
    assert third.shape == (1, 16, 8)
    np.testing.assert_allclose(third[0], kin.rollout(q, ee.chunk, velocity=v, command=c), atol=1e-5)
    with pytest.raises(ValueError, match="all carry 'velocity' or none"):
        pol.sample_chunk([moving, joint_obs(q)])
    with pytest.raises(ValueError, match="observation 0 command"):
        pol.sample_chunk([{**moving, "command": np.full(8, np.inf)}])


def test_adapter_guidance_acts_in_joint_space(kin: ArmKinematics) -> None:
    ee = RecordingEEPolicy()
    pol = JointSpaceVLA(ee, kin)
    q = np.append(HOME_QPOS, FINGER_MAX)
    base = pol.sample_chunk([joint_obs(q)])
    target = base.copy()
    target[..., 7] = 0.0  # the hook pulls the gripper closed

    out = pol.sample_chunk([joint_obs(q)], guidance=lambda est, tau: target - est)
    assert np.all(out[0, :, 7] < 0.01)


def test_adapter_rejects_bad_input(kin: ArmKinematics) -> None:
    pol = JointSpaceVLA(RecordingEEPolicy(), kin)
    with pytest.raises(ValueError, match="8 values"):
        pol.sample_chunk([joint_obs(np.zeros(7))])
    with pytest.raises(ValueError, match="non-finite"):
        pol.sample_chunk([joint_obs(np.full(8, np.nan))])
    with pytest.raises(ValueError, match="prefix must have shape"):
        pol.sample_chunk([joint_obs(np.append(HOME_QPOS, 0.0))], prefix=np.zeros((1, 3, 7)))


def test_factory_with_a_real_tiny_checkpoint(tmp_path: Path) -> None:
    ckpt = build_tiny_checkpoint(tmp_path / "ckpt")
    with pytest.raises(FileNotFoundError, match="no ONNX export"):
        make_joint_vla(str(ckpt), dt=CONTROL_DT, action_dim=8, backend="onnx")
    with pytest.raises(ValueError, match="commands 8 joints"):
        make_joint_vla(str(ckpt), dt=CONTROL_DT, action_dim=6, backend="torch")
    with pytest.raises(ValueError, match="20 Hz"):
        make_joint_vla(str(ckpt), dt=0.02, action_dim=8, backend="torch")
    with pytest.raises(ValueError, match="unknown policy keys"):
        make_joint_vla(str(ckpt), dt=CONTROL_DT, action_dim=8, backend="torch", checkpoint="x")
    with pytest.raises(ValueError, match="backend must be"):
        resolve_policy_folder(ckpt, "tensorrt")
    pol = make_joint_vla(str(ckpt), dt=CONTROL_DT, action_dim=8, backend="torch")
    env = PickPlaceEnv(cameras=CAMERAS)
    obs, _ = env.reset(seed=0)
    q = joints_of(env)
    chunk = pol.sample_chunk([{**obs, "state": q.astype(np.float32)}])
    assert chunk.shape == (1, 16, len(JOINT_NAMES))
    assert np.all(np.isfinite(chunk)) and np.all(chunk >= pol.kin.lower) and np.all(chunk <= pol.kin.upper)
    # the arm can follow it: the first target is one IK step from the measured joints
    assert np.abs(chunk[0, 0, :7] - q[:7]).max() < 0.5
    chunk2 = pol.sample_chunk([{**obs, "state": q.astype(np.float32)}], prefix=chunk[:, :3])
    np.testing.assert_array_equal(chunk2[:, :3], chunk[:, :3])


def test_adapter_builds_the_simulators_object_state_from_the_poses(kin: ArmKinematics) -> None:
    """A policy trained with obs_mode=state gets, from the measured joints and the published object
    poses, the state the simulator gave it in training."""
    env = PickPlaceEnv(cameras=(), obs_mode="state")
    ee = RecordingEEPolicy()
    pol = JointSpaceVLA(ee, kin, objects_task="pick_place")
    assert pol.n_object_poses == 2
    rng = np.random.default_rng(1)
    obs, _ = env.reset(seed=2)
    for _ in range(8):
        pol.sample_chunk([{**joint_obs(joints_of(env)), "objects": env.object_poses()}])
        state = ee.calls[-1]["state"]
        np.testing.assert_allclose(state[9:], obs["state"][9:], atol=1e-5)  # the object features
        # the proprio as test_proprio_matches_the_simulator has it (the robot reports one finger opening)
        np.testing.assert_allclose(state[:7], obs["state"][:7], atol=1e-5)
        obs, *_ = env.step(rng.uniform(-1, 1, 7))
    q = joints_of(env)
    with pytest.raises(ValueError, match=r"no object poses.*pick_place"):
        pol.sample_chunk([joint_obs(q)])
    with pytest.raises(ValueError, match=r"2 finite rows of 7.*\(1, 7\)"):
        pol.sample_chunk([{**joint_obs(q), "objects": np.zeros((1, 7))}])
    with pytest.raises(ValueError, match="2 finite rows"):
        pol.sample_chunk([{**joint_obs(q), "objects": np.full((2, 7), np.nan)}])
    with pytest.raises(ValueError, match=r"'lift' has no object poses.*pick_place"):
        JointSpaceVLA(ee, kin, objects_task="lift")


def test_factory_matches_the_checkpoints_state_to_objects_task(tmp_path: Path) -> None:
    hybrid = build_tiny_checkpoint(tmp_path / "hybrid", objects=True)
    with pytest.raises(ValueError, match=r"state_dim 9.*this one has 22 / 7.*set policy\.objects_task"):
        make_joint_vla(str(hybrid), dt=CONTROL_DT, action_dim=8, backend="torch")
    plain = build_tiny_checkpoint(tmp_path / "plain")
    with pytest.raises(ValueError, match=r"state_dim 22 \(9 of proprioception and the 'pick_place' object"):
        make_joint_vla(str(plain), dt=CONTROL_DT, action_dim=8, backend="torch", objects_task="pick_place")
    pol = make_joint_vla(str(hybrid), dt=CONTROL_DT, action_dim=8, backend="torch", objects_task="pick_place")
    env = PickPlaceEnv(cameras=CAMERAS, obs_mode="state")
    obs, _ = env.reset(seed=0)
    chunk = pol.sample_chunk([{**obs, "state": joints_of(env).astype(np.float32), "objects": env.object_poses()}])
    assert chunk.shape == (1, 16, len(JOINT_NAMES)) and np.all(np.isfinite(chunk))


def test_factory_grounds_unseen_instructions_from_the_topic(tmp_path: Path) -> None:
    import json

    vocab = tmp_path / "aliases.json"
    vocab.write_text(json.dumps({"pick up the cube and put it in the zone": ["move the cube to the zone"],
                                 "stack the red block on the green one": ["put the red block on the green one"]}))
    ckpt = build_tiny_checkpoint(tmp_path / "ckpt")
    pol = make_joint_vla(str(ckpt), dt=CONTROL_DT, action_dim=8, backend="torch", instruction_vocab=str(vocab))
    env = PickPlaceEnv(cameras=CAMERAS)
    obs, _ = env.reset(seed=0)
    q = joints_of(env).astype(np.float32)
    said, known = "carry the cube over to the zone", "pick up the cube and put it in the zone"
    noise = np.random.default_rng(0).standard_normal((1, 16, 7))
    chunk = pol.vla.sample_chunk([{**obs, "state": np.zeros(9, np.float32), "instruction": said}], noise=noise)
    pol.vla.reset()
    same = pol.vla.sample_chunk([{**obs, "state": np.zeros(9, np.float32), "instruction": known}], noise=noise)
    assert pol.vla.grounding.grounded_to(said) == known
    np.testing.assert_array_equal(chunk, same)
    assert pol.sample_chunk([{**obs, "state": q}]).shape == (1, 16, len(JOINT_NAMES))
    with pytest.raises(ValueError, match=r"instruction_vocab=checkpoint: .*0 group"):  # ckpt carries none
        make_joint_vla(str(ckpt), dt=CONTROL_DT, action_dim=8, backend="torch", instruction_vocab="checkpoint")


def test_factory_warns_on_a_policy_that_reads_the_quaternion_raw(tmp_path: Path, recwarn) -> None:
    make_joint_vla(str(build_tiny_checkpoint(tmp_path / "new")), dt=CONTROL_DT, action_dim=8, backend="torch")
    assert not [w for w in recwarn if "quaternion" in str(w.message)]
    with pytest.warns(RuntimeWarning, match="quaternion raw"):
        make_joint_vla(str(build_tiny_checkpoint(tmp_path / "old", state_quats=())), dt=CONTROL_DT, action_dim=8,
                       backend="torch")


def test_factory_wraps_test_time_selection(tmp_path: Path) -> None:
    from real.selection import ChunkSelection

    ckpt = build_tiny_checkpoint(tmp_path / "ckpt")
    pol = make_joint_vla(str(ckpt), dt=CONTROL_DT, action_dim=8, backend="torch", select=4)
    assert isinstance(pol.vla, ChunkSelection) and pol.vla.n == 4
    env = PickPlaceEnv(cameras=CAMERAS)
    obs, _ = env.reset(seed=0)
    q = joints_of(env).astype(np.float32)
    chunk = pol.sample_chunk([{**obs, "state": q}])
    assert chunk.shape == (1, 16, len(JOINT_NAMES)) and pol.vla.last_scores.shape == (4,)
    chunk2 = pol.sample_chunk([{**obs, "state": q}], prefix=chunk[:, :3])  # the executor's aligned call
    np.testing.assert_array_equal(chunk2[:, :3], chunk[:, :3])
    with pytest.raises(ValueError, match="needs cfn=DIR"):
        make_joint_vla(str(ckpt), dt=CONTROL_DT, action_dim=8, backend="torch", select=4, select_by="cfn")
