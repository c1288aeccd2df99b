import re
from types import SimpleNamespace as Msg

import numpy as np
import pytest

from real.ros.convert import (
    MessageError,
    duration_parts,
    image_to_rgb,
    instruction_text,
    joint_positions,
    joint_velocities,
    object_poses,
)


def image(h=2, w=3, enc="rgb8", pad=0, data=None):
    step = w * 3 + pad
    if data is None:
        data = bytes(np.arange(h * step, dtype=np.uint8))
    return Msg(height=h, width=w, encoding=enc, step=step, data=data)


def test_image_rgb_and_bgr_with_row_padding():
    msg = image(pad=2)
    rgb = image_to_rgb(msg, 2, 3)
    raw = np.frombuffer(msg.data, np.uint8).reshape(2, 11)
    np.testing.assert_array_equal(rgb, raw[:, :9].reshape(2, 3, 3))
    bgr = image_to_rgb(image(pad=2, enc="bgr8"), 2, 3)
    np.testing.assert_array_equal(bgr, rgb[..., ::-1])
    assert rgb.dtype == np.uint8 and rgb.flags.c_contiguous


@pytest.mark.parametrize(("msg", "match"), [
    (image(enc="mono16"), "encoding"),
    (image(h=3), "expected 2x3"),
    (image(data=bytes(5)), "bytes"),
    (Msg(height=2, width=3, encoding="rgb8", step=4, data=bytes(8)), "step"),
])
def test_image_rejects(msg, match):
    with pytest.raises(MessageError, match=match):
        image_to_rgb(msg, 2, 3)


def test_joint_positions_reorders_and_ignores_extra_joints():
    msg = Msg(name=["b", "gripper", "a"], position=[2.0, 9.0, 1.0])
    np.testing.assert_array_equal(joint_positions(msg, ("a", "b")), [1.0, 2.0])


@pytest.mark.parametrize(("msg", "match"), [
    (Msg(name=["a"], position=[1.0]), "lacks joints"),
    (Msg(name=["a", "b"], position=[1.0]), "positions"),
    (Msg(name=["a", "a"], position=[1.0, 1.0]), "duplicated"),
    (Msg(name=["a", "b"], position=[1.0, float("nan")]), "not finite"),
])
def test_joint_positions_rejects(msg, match):
    with pytest.raises(MessageError, match=match):
        joint_positions(msg, ("a", "b"))


def test_joint_velocities_are_optional_and_validated():
    assert joint_velocities(Msg(name=["a", "b"], position=[1.0, 2.0], velocity=[]), ("a", "b")) is None
    msg = Msg(name=["b", "gripper", "a"], position=[2.0, 9.0, 1.0], velocity=[0.2, 0.0, 0.1])
    np.testing.assert_array_equal(joint_velocities(msg, ("a", "b")), [0.1, 0.2])
    with pytest.raises(MessageError, match="velocities"):
        joint_velocities(Msg(name=["a", "b"], position=[1.0, 2.0], velocity=[0.1]), ("a", "b"))
    with pytest.raises(MessageError, match="velocities not finite"):
        joint_velocities(Msg(name=["a", "b"], position=[1.0, 2.0], velocity=[0.1, float("inf")]), ("a", "b"))


def test_instruction_and_duration():
    assert instruction_text(Msg(data="pick the cube"), 100) == "pick the cube"
    with pytest.raises(MessageError, match="characters"):
        instruction_text(Msg(data="x" * 101), 100)
    with pytest.raises(MessageError, match="non-printable"):
        instruction_text(Msg(data="a\x00b"), 100)
    assert duration_parts(1.25) == (1, 250_000_000)
    assert duration_parts(0.9999999999) == (1, 0)
    with pytest.raises(ValueError, match="finite"):
        duration_parts(float("inf"))


def pose_array(rows, frame="world"):
    poses = [Msg(position=Msg(x=r[0], y=r[1], z=r[2]), orientation=Msg(x=r[3], y=r[4], z=r[5], w=r[6])) for r in rows]
    return Msg(header=Msg(frame_id=frame), poses=poses)


def test_object_poses_keep_order_and_sign_and_renormalise():
    rows = [[0.1, -0.2, 0.02, 0.0, 0.0, -0.3826834, -0.9238795 * (1 + 5e-4)], [0.3, 0.1, 0.0, 0.0, 0.0, 0.0, 1.0]]
    out = object_poses(pose_array(rows), 2, "world")
    assert out.shape == (2, 7) and out.dtype == np.float64
    np.testing.assert_allclose(out[:, :3], np.asarray(rows)[:, :3])
    np.testing.assert_allclose(np.linalg.norm(out[:, 3:], axis=1), 1.0, atol=1e-12)
    assert out[0, 6] < 0  # the sender's sign is kept: the simulator's state keeps MuJoCo's


@pytest.mark.parametrize(("rows", "frame", "match"), [
    ([[0, 0, 0, 0, 0, 0, 1]], "world", "1 object poses, expected 2"),
    ([[0, 0, 0, 0, 0, 0, 1]] * 2, "camera", "frame 'camera'"),
    ([[np.nan, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 1]], "world", "not finite"),
    ([[0, 0, 1e39, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 1]], "world", "not finite as float32"),
    ([[0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 0]], "world", "object pose 1 has a quaternion of norm 0"),
    ([[0, 0, 0, 0, 0, 0, 1.01], [0, 0, 0, 0, 0, 0, 1]], "world", "norm 1.01"),
])
def test_object_poses_rejects(rows, frame, match):
    with pytest.raises(MessageError, match=match):
        object_poses(pose_array(rows, frame), 2, "world")


@pytest.mark.parametrize(("text", "code", "index"), [("a\x00b", "U+0000", 1), ("go\nleft", "U+000A", 2),
                                                     ("\x1b[31mred", "U+001B", 0), ("up\u2028now", "U+2028", 2)])
def test_control_characters_in_an_instruction_are_rejected_by_name(text, code, index):
    """Rejected, not stripped, with the character and where it is (before: "non-printable characters")."""
    pattern = rf"non-printable character {re.escape(code)} .* at index {index}: .*rejected, not stripped"
    with pytest.raises(MessageError, match=pattern):
        instruction_text(Msg(data=text), 100)
