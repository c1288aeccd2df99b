"""`train.augment`: the perturbation suite's pose and arm errors drawn into training windows."""

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.vla.perception.helpers import pose_store
from vla.robot.objects import pick_place_features, pick_place_poses
from vla.train.augment import augment_states, parse_augment
from vla.train.config import TrainConfig
from vla.train.pretrain import build
from vla.train.trainer import Trainer


def pick_place_state(cube_xyz: tuple[float, float, float], zone_xyz: tuple[float, float, float],
                     hand: tuple[float, float, float]) -> np.ndarray:
    proprio = np.array([*hand, 0.0, 0.0, 0.0, 1.0, 0.02, 0.02])
    poses = np.array([[*cube_xyz, 0.0, 0.0, 0.0, 1.0], [*zone_xyz, 0.0, 0.0, 0.0, 1.0]])
    return np.concatenate([proprio, pick_place_features(poses, np.asarray(hand))])


def windows(b: int = 16, to: int = 2) -> np.ndarray:
    row = pick_place_state((0.05, -0.1, 0.02), (-0.1, 0.12, 0.0), (0.0, 0.0, 0.2))
    return np.tile(row, (b, to, 1))


def test_parse_takes_pose_and_arm_kinds_and_names_the_rest() -> None:
    assert parse_augment("") == {} and parse_augment("none") == {}
    assert parse_augment("pose_bias:8,pose_noise:3") == {"pose_bias": 8.0, "pose_noise": 3.0}
    assert parse_augment("pose_latency:2,pose_dropout:0.3") == {"pose_latency": 2.0, "pose_dropout": 0.3}
    with pytest.raises(ValueError, match=r"'camera_shift' cannot be drawn in training .*demos.randomize"):
        parse_augment("camera_shift:10")
    with pytest.raises(ValueError, match="did you mean 'pose_bias'"):
        parse_augment("pose_bais:3")
    with pytest.raises(ValueError, match="'camera_shift' cannot be drawn"):
        TrainConfig(augment="camera_shift:1")


def test_a_bias_moves_every_object_of_a_window_alike_and_the_hand_offset_with_it() -> None:
    x = windows()
    out = augment_states(x, "pick_place", {"pose_bias": 10.0}, np.random.default_rng(0))
    assert np.array_equal(x, windows())  # the input is left alone
    np.testing.assert_array_equal(out[..., :9], x[..., :9])  # the arm's state is not touched
    poses_in = np.stack([pick_place_poses(r) for r in x.reshape(-1, 22)[:, 9:]]).reshape(16, 2, 2, 7)
    poses_out = np.stack([pick_place_poses(r) for r in out.reshape(-1, 22)[:, 9:]]).reshape(16, 2, 2, 7)
    shift = poses_out[..., :3] - poses_in[..., :3]
    np.testing.assert_allclose(shift[:, :, 0], shift[:, :, 1], atol=1e-12)  # cube and zone alike
    np.testing.assert_allclose(shift[:, 0], shift[:, 1], atol=1e-12)  # the whole window alike
    lengths = 1000 * np.linalg.norm(shift[:, 0, 0], axis=-1)
    assert lengths.max() <= 10.0 + 1e-9 and lengths.min() < 5.0 < lengths.max()  # drawn from [0, 10] mm
    np.testing.assert_allclose(out[..., 16:19], out[..., 9:12] - out[..., :3], atol=1e-12)  # cube - hand
    np.testing.assert_array_equal(out[..., 12:16], x[..., 12:16])  # no rotation asked, none given


def test_noise_differs_step_to_step_and_the_same_seed_draws_the_same() -> None:
    kinds = {"pose_noise": 5.0, "pose_rot_noise": 4.0, "proprio_noise": 2.0}
    a = augment_states(windows(), "pick_place", kinds, np.random.default_rng(3))
    b = augment_states(windows(), "pick_place", kinds, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a[:, 0], a[:, 1])
    assert not np.allclose(a[..., :3], windows()[..., :3])  # the hand's position carries its noise
    q = a[..., 12:16]
    np.testing.assert_allclose(np.linalg.norm(q, axis=-1), 1.0, atol=1e-9)
    assert not np.allclose(q, windows()[..., 12:16])
    np.testing.assert_allclose(a[..., 16:19], a[..., 9:12] - a[..., :3], atol=1e-12)


def test_latency_delivers_an_earlier_pose_with_the_current_hand() -> None:
    x = windows(b=64, to=1)
    earlier = {1: x.copy(), 2: x.copy()}
    earlier[1][..., 9:12] -= 0.01  # the cube 1 cm back one step earlier, 2 cm two steps earlier
    earlier[2][..., 9:12] -= 0.02
    earlier[1][..., :3] = earlier[2][..., :3] = 0.5  # the hand elsewhere then: its current position must stay
    out = augment_states(x, "pick_place", {"pose_latency": 2}, np.random.default_rng(0), earlier)
    back = np.round((x[:, 0, 9] - out[:, 0, 9]) / 0.01).astype(int)
    assert set(back.tolist()) == {0, 1, 2}  # a whole number of steps late, drawn per window from 0..2
    np.testing.assert_allclose(out[..., :3], x[..., :3])
    np.testing.assert_allclose(out[..., 16:19], out[..., 9:12] - out[..., :3], atol=1e-12)
    dropped = augment_states(x, "pick_place", {"pose_dropout": 1.0}, np.random.default_rng(0), earlier)
    late = np.isclose(dropped[:, 0, 9], x[:, 0, 9] - 0.01)
    assert 0 < late.sum() < len(late)  # some steps re-send the pose of one step before, the rest are on time
    with pytest.raises(ValueError, match=r"need the states \[2\] steps earlier"):
        augment_states(x, "pick_place", {"pose_latency": 2}, np.random.default_rng(0), {1: x})


def test_states_without_object_poses_are_a_clear_error() -> None:
    with pytest.raises(ValueError, match="task 'lift' has no object poses in its state"):
        augment_states(windows(), "lift", {"pose_noise": 1.0}, np.random.default_rng(0))
    with pytest.raises(ValueError, match="states have 20 values, expected 22"):
        augment_states(windows()[..., :20], "pick_place", {"pose_noise": 1.0}, np.random.default_rng(0))


def test_training_sees_the_drawn_errors_and_the_targets_stay_clean(tmp_path: Path) -> None:
    store = pose_store(tmp_path / "s.zarr", 4)
    policy, _, train_ds, _, stats = build(store, "tiny", "debug", ["policy.cameras=[]"])
    seen: list[dict] = []

    def trainer(augment: str) -> Trainer:
        torch.manual_seed(0)
        from vla.policy.model import VLAModel

        cfg = TrainConfig(steps=2, batch_size=8, device="cpu", progress=False, tensorboard=False, augment=augment)
        t = Trainer(VLAModel(policy), train_ds, cfg, tmp_path / augment.replace(":", "_"), stats)
        inner = t._loss_fn
        t._loss_fn = lambda batch, gen: (seen.append(batch), inner(batch, gen))[1]  # type: ignore[assignment]
        return t

    batch = train_ds.get_batch(np.arange(8))
    trainer("").train_step(batch)
    trainer("pose_bias:20").train_step(batch)
    trainer("pose_latency:3").train_step(batch)
    clean, noisy, late = seen
    assert torch.equal(clean["state"], batch["state"])
    moved = (noisy["state"] - batch["state"])[..., 9:12].norm(dim=-1)
    assert moved.max() > 1e-3 and moved.max() <= 0.02 + 1e-6
    assert torch.equal(noisy["action"], batch["action"]) and torch.equal(noisy["future_state"], batch["future_state"])
    # late poses are ones the episode had earlier (the store's own states), never invented ones
    stored = {tuple(np.round(r, 5)) for r in train_ds.store.read("state", 0, train_ds.store.n_steps)[:, 9:12]}
    cubes = late["state"][..., 9:12].reshape(-1, 3).numpy()
    assert all(tuple(np.round(c, 5)) in stored for c in cubes)
    assert not torch.equal(late["state"], batch["state"])
