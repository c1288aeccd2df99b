"""Videos people watch: a viewing camera at a watchable size, with who is in control written on it."""

from pathlib import Path

import av
import numpy as np

from sim.tasks.native.pick_place import PickPlaceEnv
from vla.video import BAR_HEIGHT, CONTROL_COLOURS, annotate, can_view, view_frame, write_mp4


def test_annotate_adds_a_bar_with_the_controller_in_its_colour() -> None:
    frame = np.full((64, 96, 3), 128, np.uint8)
    out = {c: annotate(frame, 17, "pick_cube", c) for c in ("policy", "intervener")}
    for img in out.values():
        assert img.shape == (64 + BAR_HEIGHT, 96, 3) and np.array_equal(img[:64], frame)
    # the label sits at the bar's right end, drawn in the controller's colour
    right = {c: img[64:, 48:].reshape(-1, 3) for c, img in out.items()}
    for c, px in right.items():
        assert (np.abs(px.astype(int) - CONTROL_COLOURS[c]).sum(axis=1) < 30).any(), c
    assert not np.array_equal(right["policy"], right["intervener"])


def test_native_task_renders_its_viewing_camera_apart_from_the_policy_cameras() -> None:
    env = PickPlaceEnv(image_size=32)
    obs, _ = env.reset(seed=0)
    view = view_frame(env, obs, 128)
    assert view.shape == (128, 128, 3) and view.std() > 10  # a real picture, not a blank buffer
    obs2, *_ = env.step(np.zeros(7, np.float32))
    assert obs2["images"]["agentview"].shape == (32, 32, 3)  # the policy's cameras are untouched
    env.close()


class _NoViewEnv:
    """A task without a viewing camera (robosuite, Meta-World)."""


def test_tasks_without_a_viewing_camera_scale_their_own_cameras_up() -> None:
    obs = {"images": {"a": np.zeros((32, 32, 3), np.uint8), "b": np.ones((32, 32, 3), np.uint8)}}
    frame = view_frame(_NoViewEnv(), obs, 128)
    assert frame.shape == (128, 256, 3)  # whole-factor nearest-neighbour scaling, cameras side by side
    assert view_frame(_NoViewEnv(), obs, 0).shape == (32, 64, 3)
    assert not can_view(_NoViewEnv(), {"images": {}}, 256)


def test_annotated_frames_make_a_playable_mp4(tmp_path: Path) -> None:
    frames = [annotate(np.full((40, 40, 3), 20 * i, np.uint8), i, None, "guided") for i in range(5)]
    path = write_mp4(tmp_path / "v.mp4", frames)
    with av.open(str(path)) as c:
        decoded = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    assert len(decoded) == 5 and decoded[0].shape == (40 + BAR_HEIGHT, 40, 3)
