"""Validation and numpy conversion of incoming ROS messages (no cv_bridge, no rclpy import).

Functions take the message objects duck-typed (attributes of sensor_msgs/Image and
sensor_msgs/JointState), so they are unit-testable without ROS. Every check raises
`MessageError` naming what is wrong; the node drops such messages and counts them.
"""

from __future__ import annotations

import math
import unicodedata
from typing import Any

import numpy as np

RGB_ENCODINGS = {"rgb8": False, "bgr8": True}  # encoding -> needs channel swap


class MessageError(ValueError):
    """An incoming message failed validation."""


class StampError(MessageError):
    """A message's header stamp is too old or too new (a replay, a stalled driver, an unsynced clock)."""


# The policy sees joint states as float32 (vla.interfaces.Observation): a value finite in float64 but
# past float32's range (3.4e38) would turn into inf after the cast, so finiteness is checked there.
STATE_DTYPE = np.float32


def image_to_rgb(msg: Any, height: int, width: int) -> np.ndarray:
    """sensor_msgs/Image (rgb8 or bgr8, exactly height x width) -> uint8 [H, W, 3] RGB copy."""
    enc = str(msg.encoding).lower()
    if enc not in RGB_ENCODINGS:
        raise MessageError(f"image encoding {msg.encoding!r} not supported (use one of {sorted(RGB_ENCODINGS)})")
    if (msg.height, msg.width) != (height, width):
        raise MessageError(f"image is {msg.height}x{msg.width}, expected {height}x{width}")
    row = width * 3
    if msg.step < row:
        raise MessageError(f"image step {msg.step} < width * 3 = {row}")
    data = np.frombuffer(bytes(msg.data), dtype=np.uint8) if not isinstance(msg.data, np.ndarray) \
        else np.asarray(msg.data, dtype=np.uint8).ravel()
    if data.size != msg.step * height:
        raise MessageError(f"image data has {data.size} bytes, expected step * height = {msg.step * height}")
    img = data.reshape(height, msg.step)[:, :row].reshape(height, width, 3)
    return np.ascontiguousarray(img[..., ::-1] if RGB_ENCODINGS[enc] else img)


def joint_positions(msg: Any, joint_names: tuple[str, ...]) -> np.ndarray:
    """sensor_msgs/JointState -> float64 positions in the order of `joint_names`.

    Extra joints are ignored (a robot publishes grippers, wheels...); missing or duplicated names,
    mismatched lengths and non-finite positions are errors.
    """
    names = list(msg.name)
    if len(set(names)) != len(names):
        raise MessageError(f"joint state has duplicated names {names}")
    return _by_name(names, msg.position, "positions", joint_names)


def joint_velocities(msg: Any, joint_names: tuple[str, ...]) -> np.ndarray | None:
    """sensor_msgs/JointState -> float64 velocities in the order of `joint_names`, or None when the
    message carries none (the field is optional). Call after `joint_positions` validated the names."""
    if len(msg.velocity) == 0:
        return None
    return _by_name(list(msg.name), msg.velocity, "velocities", joint_names)


def _by_name(names: list[str], values: Any, what: str, joint_names: tuple[str, ...]) -> np.ndarray:
    """One JointState array (`what`: its plural, for errors): length-checked against the names,
    reordered to `joint_names`, all finite also once cast to STATE_DTYPE."""
    if len(values) != len(names):
        raise MessageError(f"joint state has {len(names)} names but {len(values)} {what}")
    index = {n: i for i, n in enumerate(names)}
    missing = [n for n in joint_names if n not in index]
    if missing:
        raise MessageError(f"joint state lacks joints {missing} (got {names})")
    out = np.array([float(values[index[n]]) for n in joint_names])
    with np.errstate(over="ignore"):
        cast = out.astype(STATE_DTYPE)
    if not np.all(np.isfinite(cast)):
        raise MessageError(f"joint state {what} not finite as {np.dtype(STATE_DTYPE).name}: {out}")
    return out


def object_poses(msg: Any, count: int, frame_id: str, quat_norm_tolerance: float = 1e-3) -> np.ndarray:
    """geometry_msgs/PoseArray -> float64 [count, 7] (position, quaternion xyzw): exactly `count` poses
    in `frame_id`, finite as STATE_DTYPE, unit quaternions (re-normalised within the tolerance; beyond
    it the message is broken). The quaternion's sign is kept as sent, as the simulator's state keeps
    MuJoCo's (a policy with `state_quats` reads both signs the same)."""
    if str(msg.header.frame_id) != frame_id:
        raise MessageError(f"object poses in frame {msg.header.frame_id!r}, expected {frame_id!r}")
    if len(msg.poses) != count:
        raise MessageError(f"{len(msg.poses)} object poses, expected {count}")
    out = np.array([[p.position.x, p.position.y, p.position.z,
                     p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w] for p in msg.poses],
                   dtype=np.float64).reshape(count, 7)
    with np.errstate(over="ignore", invalid="ignore"):
        finite = np.isfinite(out.astype(STATE_DTYPE))
    if not np.all(finite):
        raise MessageError(f"object poses not finite as {np.dtype(STATE_DTYPE).name}: "
                           f"poses {sorted(set(np.flatnonzero(~finite.all(axis=1)).tolist()))}")
    norm = np.linalg.norm(out[:, 3:], axis=1)
    bad = np.flatnonzero(np.abs(norm - 1.0) > quat_norm_tolerance)
    if bad.size:
        raise MessageError(f"object pose {int(bad[0])} has a quaternion of norm {norm[bad[0]]:.6g}, not 1")
    out[:, 3:] /= norm[:, None]
    return out


def instruction_text(msg: Any, max_chars: int) -> str:
    """std_msgs/String -> the instruction; empty or blank text is an error (a language-conditioned
    policy cannot run on it: it would fail every inference until the next instruction).

    Control and other non-printable characters (NUL, newline, tab, escape, line separators...) are
    rejected, not stripped: the text the policy runs on is exactly what the operator sent, or nothing.
    A NUL never gets here: DDS cuts the string there, so "pick up\0 the cube" arrives as "pick up",
    a shorter instruction with a meaning of its own; senders must not put one in.
    """
    text = str(msg.data)
    if not text.strip():
        raise MessageError("instruction is empty or blank")
    if len(text) > max_chars:
        raise MessageError(f"instruction has {len(text)} characters, limit {max_chars}")
    if not text.isprintable():
        i, ch = next((i, c) for i, c in enumerate(text) if not c.isprintable())
        name = unicodedata.name(ch, "a control character")
        raise MessageError(f"instruction contains a non-printable character U+{ord(ch):04X} ({name}) at index {i}: "
                           "send plain one-line text (control characters are rejected, not stripped)")
    return text


def stamp_seconds(stamp: Any) -> float:
    """Header stamp (builtin_interfaces/Time) -> seconds."""
    return stamp.sec + 1e-9 * stamp.nanosec


def check_stamp(stamp: Any, now_s: float, tolerance_s: float) -> float:
    """Header stamp (builtin_interfaces/Time) -> its age in seconds against `now_s` (the node's ROS
    clock: wall time, or simulation time under `use_sim_time`). Raises StampError when it is unset
    (0), malformed, or older or newer than `tolerance_s`: a replayed message is not fresh data."""
    sec, nanosec = int(stamp.sec), int(stamp.nanosec)
    if not 0 <= nanosec < 1_000_000_000:
        raise StampError(f"header stamp nanosec {nanosec} outside [0, 1e9)")
    if sec == 0 and nanosec == 0:
        raise StampError("header stamp is unset (0): the sender must stamp its messages")
    if not math.isfinite(now_s) or now_s <= 0:
        raise StampError(f"the node's ROS clock reads {now_s} (simulation time without /clock yet?)")
    age = now_s - (sec + 1e-9 * nanosec)
    if abs(age) > tolerance_s:
        when = "old" if age > 0 else "in the future"
        raise StampError(f"header stamp is {abs(age):.3f} s {when} (tolerance {tolerance_s} s)")
    return age


def duration_parts(seconds: float) -> tuple[int, int]:
    """Seconds -> (sec, nanosec) for builtin_interfaces/Duration."""
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"duration must be finite and >= 0, got {seconds}")
    sec, nanosec = divmod(round(seconds * 1e9), 1_000_000_000)
    return int(sec), int(nanosec)
