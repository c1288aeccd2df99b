"""Hostile inputs at the policy node's message boundary (real/ros/convert.py), property-based.

Each generated message must either raise MessageError (the node drops and counts it) or convert to
something the policy can use: joint values finite *as float32* (the observation's dtype), images of
the configured size, a non-blank printable instruction, a stamp within the tolerance.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from real.ros.convert import (
    MessageError,
    StampError,
    check_stamp,
    image_to_rgb,
    instruction_text,
    joint_positions,
    joint_velocities,
    object_poses,
)
from tests.real.ros.helpers import record_case

msgs = pytest.importorskip("sensor_msgs.msg")
from builtin_interfaces.msg import Time  # noqa: E402
from geometry_msgs.msg import Pose, PoseArray  # noqa: E402
from std_msgs.msg import String  # noqa: E402

NAMES = ("a", "b", "c")


def test_joint_value_past_float32_range_is_rejected() -> None:
    """1e39 is finite in float64 but inf once cast to the observation's float32."""
    with pytest.raises(MessageError, match="float32"):
        joint_positions(msgs.JointState(name=list(NAMES), position=[0.0, 1e39, 0.0]), NAMES)
    with pytest.raises(MessageError, match="float32"):
        joint_velocities(msgs.JointState(name=list(NAMES), position=[0.0] * 3, velocity=[-4e38, 0, 0]), NAMES)


@pytest.mark.parametrize("text", ["", " ", "\t\n ", "\u3000"])
def test_blank_instruction_is_rejected(text) -> None:
    with pytest.raises(MessageError, match="empty"):
        instruction_text(String(data=text), 100)


def test_stamps_outside_the_tolerance_are_rejected() -> None:
    now = 1_700_000_000.25
    assert abs(check_stamp(Time(sec=1_700_000_000, nanosec=150_000_000), now, 0.5) - 0.1) < 1e-6
    for stamp, match in [(Time(sec=1_699_999_990), "old"), (Time(sec=1_700_000_010), "future"),
                         (Time(), "unset")]:
        with pytest.raises(StampError, match=match):
            check_stamp(stamp, now, 0.5)
    with pytest.raises(StampError, match="clock"):  # simulation time before the first /clock message
        check_stamp(Time(sec=5), 0.0, 0.5)


NAME = st.sampled_from([*NAMES, "gripper", "", "a ", "ä"])
VALUE = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e39, -3.5e38, 3.4e38, 0.0]))


@settings(max_examples=150, deadline=None)
@given(names=st.lists(NAME, max_size=6), pos=st.lists(VALUE, max_size=6), vel=st.lists(VALUE, max_size=6))
def test_hostile_joint_states(names, pos, vel) -> None:
    msg = msgs.JointState(name=names, position=pos, velocity=vel)
    try:
        q = joint_positions(msg, NAMES)
        qd = joint_velocities(msg, NAMES)
    except MessageError as err:
        record_case("joint_state", (names, pos, vel), f"rejected:{str(err).split(':')[0][:40]}")
        return
    for arr in (q, qd):
        if arr is not None:
            assert arr.shape == (3,) and np.all(np.isfinite(arr.astype(np.float32)))
    record_case("joint_state", (names, pos, vel), "accepted")


ENCODING = st.sampled_from(["rgb8", "bgr8", "RGB8", "mono8", "32FC1", "", "rgba8"])


@settings(max_examples=150, deadline=None)
@given(h=st.integers(0, 6), w=st.integers(0, 6), enc=ENCODING, step=st.integers(0, 30), n=st.integers(0, 200))
def test_hostile_images(h, w, enc, step, n) -> None:
    msg = msgs.Image(height=h, width=w, encoding=enc, step=step, data=bytes(range(256))[:n] * 1)
    try:
        img = image_to_rgb(msg, 4, 5)
    except MessageError as err:
        record_case("image", (h, w, enc, step, n), f"rejected:{str(err)[:30]}")
        return
    assert img.shape == (4, 5, 3) and img.dtype == np.uint8
    record_case("image", (h, w, enc, step, n), "accepted")


@settings(max_examples=100, deadline=None)
@given(text=st.one_of(st.text(max_size=40), st.sampled_from(["", " ", "\x00", "a\nb", "x" * 101])))
def test_hostile_instructions(text) -> None:
    try:
        out = instruction_text(String(data=text), 100)
    except MessageError as err:
        record_case("instruction", text, f"rejected:{str(err)[:30]}")
        return
    assert out.strip() and out.isprintable() and len(out) <= 100
    record_case("instruction", text, "accepted")


@settings(max_examples=100, deadline=None)
@given(sec=st.integers(-(2**31), 2**31 - 1), nanosec=st.integers(0, 2**32 - 1),
       now=st.one_of(st.floats(0, 4e9), st.just(math.nan)))
def test_hostile_stamps(sec, nanosec, now) -> None:
    stamp = Time(sec=sec, nanosec=nanosec)
    try:
        age = check_stamp(stamp, now, 0.5)
    except StampError as err:
        record_case("stamp", (sec, nanosec, now), f"rejected:{str(err)[:20]}")
        return
    assert abs(age) <= 0.5
    record_case("stamp", (sec, nanosec, now), "accepted")


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.lists(VALUE, min_size=7, max_size=7), max_size=4),
       frame=st.sampled_from(["world", "", "camera", "world "]))
def test_hostile_object_poses(rows, frame) -> None:
    msg = PoseArray(poses=[Pose() for _ in rows])
    for p, r in zip(msg.poses, rows, strict=True):
        p.position.x, p.position.y, p.position.z = r[:3]
        p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = r[3:]
    msg.header.frame_id = frame
    try:
        out = object_poses(msg, 2, "world")
    except MessageError as err:
        record_case("object_poses", (rows, frame), f"rejected:{str(err)[:30]}")
        return
    assert out.shape == (2, 7) and np.all(np.isfinite(out.astype(np.float32)))
    np.testing.assert_allclose(np.linalg.norm(out[:, 3:], axis=1), 1.0, atol=1e-9)
    record_case("object_poses", (rows, frame), "accepted")
