"""A person at the controls of a correction session: the input devices.

A `TeleopDevice` turns whatever the person touches into one small `TeleopCommand` per control
step: a 6-dim end-effector motion (dpos, drot in [-1, 1], the tasks' EE-delta convention) and
edge-triggered events (take over / hand back, gripper toggle, rewind, end the episode with a
success or failure mark, quit). Devices know nothing about robots or policies;
`real.session.HumanIntervener` turns their commands into the `vla.interfaces.Intervener`
protocol, so a person and the scripted expert (`sim.intervener.ExpertIntervener`) drive the same
session loop (`real.session`).

Devices: `KeyboardDevice` (the terminal in cbreak mode: works over SSH without a display),
`GamepadDevice` (pygame) and `SpaceMouseDevice` (pyspacemouse), both optional extras
(`pip install 'vla-stack[teleop]'`); `CombinedDevice` adds the keyboard's events to a gamepad or
SpaceMouse; `ReplayDevice` plays a fixed command list (tests, scripted demos).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import select
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

import numpy as np

ENDS = ("success", "failure")
TELEOP_EXTRA = "pip install 'vla-stack[teleop]'"

KEYBOARD_HELP = """\
keyboard (type in this terminal):
  space      take over / hand back to the policy
  W / S      +x / -x (forward / back)     A / D   +y / -y (left / right)     R / F   up / down
  arrows     rotate: up/down pitch, left/right yaw      Z / C   roll
  G          gripper open / close
  B          rewind along the recorded path (press again or move to stop)
  Enter      end the episode: success     X   end the episode: failure
  Q          quit the session (the episode in progress is dropped)      Ctrl-C  same
Tap a key to nudge, hold it to keep moving."""


class TeleopUnavailable(RuntimeError):
    """A device's driver package or hardware is missing."""


@dataclass(frozen=True)
class TeleopCommand:
    """One control step's input. Events are edges: true only on the step the button went down."""

    motion: np.ndarray = field(default_factory=lambda: np.zeros(6, np.float32))  # dpos 3, drot 3 in [-1, 1]
    toggle_control: bool = False
    gripper_toggle: bool = False
    rewind: bool = False
    end: str | None = None  # "success" | "failure"
    quit: bool = False

    def __post_init__(self) -> None:
        if self.end is not None and self.end not in ENDS:
            raise ValueError(f"unknown end mark '{self.end}' (valid: {', '.join(ENDS)})")
        motion = np.clip(np.asarray(self.motion, np.float32).reshape(-1), -1.0, 1.0)
        if motion.shape != (6,):
            raise ValueError(f"motion must have 6 values (dpos 3, drot 3), got {motion.shape[0]}")
        object.__setattr__(self, "motion", motion)

    @property
    def moving(self) -> bool:
        return bool(np.any(self.motion != 0.0))


def merge_commands(commands: Iterable[TeleopCommand]) -> TeleopCommand:
    """Several devices at once: motions add (then clip), events from any device count."""
    commands = list(commands)
    if not commands:
        return TeleopCommand()
    ends = [c.end for c in commands if c.end is not None]
    return TeleopCommand(motion=np.sum([c.motion for c in commands], axis=0),
                         toggle_control=any(c.toggle_control for c in commands),
                         gripper_toggle=any(c.gripper_toggle for c in commands),
                         rewind=any(c.rewind for c in commands),
                         end="failure" if "failure" in ends else (ends[0] if ends else None),
                         quit=any(c.quit for c in commands))


@runtime_checkable
class TeleopDevice(Protocol):
    def poll(self) -> TeleopCommand:
        """The command for this control step; never blocks."""
        ...

    def close(self) -> None: ...


# ---- keyboard ---------------------------------------------------------------------------------------
_ESCAPES = {"[A": "up", "[B": "down", "[C": "right", "[D": "left", "OA": "up", "OB": "down", "OC": "right",
            "OD": "left"}
# key -> (motion index, sign)
KEY_MOTION: dict[str, tuple[int, float]] = {
    "w": (0, 1.0), "s": (0, -1.0), "a": (1, 1.0), "d": (1, -1.0), "r": (2, 1.0), "f": (2, -1.0),
    "z": (3, 1.0), "c": (3, -1.0), "up": (4, 1.0), "down": (4, -1.0), "left": (5, 1.0), "right": (5, -1.0),
}


def parse_keys(text: str) -> tuple[list[str], str]:
    """Terminal input -> (key names, unparsed tail). Letters are lower-cased; arrows come as
    escape sequences, which a read may split: an incomplete one is returned as the tail."""
    keys: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\x1b":
            seq = text[i + 1:i + 3]
            if len(seq) < 2 and seq in ("", "[", "O"):
                return keys, text[i:]
            if seq in _ESCAPES:
                keys.append(_ESCAPES[seq])
                i += 3
                continue
            # Another escape sequence (function keys ...): skip to its final byte.
            j = i + 1
            if j < len(text) and text[j] in "[O":
                j += 1
                while j < len(text) and not text[j].isalpha() and text[j] != "~":
                    j += 1
            i = j + 1
            continue
        keys.append("enter" if ch in "\r\n" else "space" if ch == " " else ch.lower())
        i += 1
    return keys, ""


def keys_to_command(keys: Sequence[str], speed: float = 1.0) -> TeleopCommand:
    """Pure mapping of one poll's keys (auto-repeat makes a held key arrive many times)."""
    motion = np.zeros(6, np.float32)
    for k in keys:
        if k in KEY_MOTION:
            index, sign = KEY_MOTION[k]
            motion[index] = sign * speed  # the latest press along an axis wins
    end = "success" if "enter" in keys else "failure" if "x" in keys else None
    return TeleopCommand(motion=motion, toggle_control="space" in keys, gripper_toggle="g" in keys,
                         rewind="b" in keys, end=end, quit="q" in keys)


class KeyboardDevice:
    """The controlling terminal in cbreak mode (no line buffering, no echo; Ctrl-C still interrupts).

    Terminals report key presses, not releases: a held key arrives as auto-repeat characters, so a
    motion lasts `hold` polls after its last character to bridge the gaps between repeats.
    """

    def __init__(self, fd: int | None = None, speed: float = 1.0, hold: int = 3) -> None:
        import sys
        import termios
        import tty

        self._saved: list[Any] | None = None
        if fd is None:
            try:
                fd = sys.stdin.fileno()
            except (OSError, ValueError):  # replaced or closed stdin (io.UnsupportedOperation is both)
                fd = -1
        self.fd = fd
        if fd < 0 or not os.isatty(fd):
            raise TeleopUnavailable("the keyboard device needs a terminal (stdin is not a tty); run the session "
                                    "in a terminal, or use --device gamepad | spacemouse | scripted")
        self.speed, self.hold = float(speed), int(hold)
        self._saved = termios.tcgetattr(self.fd)
        tty.setcbreak(self.fd)
        self._tail = ""
        self._last_motion = np.zeros(6, np.float32)
        self._since_motion = self.hold + 1

    def _read(self) -> str:
        chunks = []
        while select.select([self.fd], [], [], 0)[0]:
            data = os.read(self.fd, 1024)
            if not data:
                break
            chunks.append(data)
        return b"".join(chunks).decode("utf-8", errors="ignore")

    def poll(self) -> TeleopCommand:
        keys, self._tail = parse_keys(self._tail + self._read())
        cmd = keys_to_command(keys, self.speed)
        if cmd.moving:
            self._last_motion, self._since_motion = cmd.motion, 0
        else:
            self._since_motion += 1
            if self._since_motion <= self.hold:
                cmd = replace(cmd, motion=self._last_motion)
        return cmd

    def close(self) -> None:
        import termios

        if self._saved is not None:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            self._saved = None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown, fd already closed
            self.close()


# ---- optional devices -------------------------------------------------------------------------------
def require(module: str, device: str) -> Any:
    """Import a device's optional driver, or fail naming the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise TeleopUnavailable(f"the {device} device needs the '{module}' package, which is not installed: "
                                f"{TELEOP_EXTRA}") from e


@dataclass(frozen=True)
class GamepadMap:
    """pygame joystick indices (Xbox-style pad under SDL on Linux). Sticks: left = x/y translation,
    right = pitch/yaw; triggers = down/up; d-pad x = roll."""

    left_x: int = 0
    left_y: int = 1
    left_trigger: int = 2
    right_x: int = 3
    right_y: int = 4
    right_trigger: int = 5
    toggle_control: int = 0  # A
    rewind: int = 1  # B
    gripper_toggle: int = 2  # X
    failure: int = 6  # Back
    success: int = 7  # Start
    deadzone: float = 0.15


def _axis(values: Sequence[float], index: int, deadzone: float) -> float:
    v = float(values[index]) if index < len(values) else 0.0
    return 0.0 if abs(v) < deadzone else v


def gamepad_command(axes: Sequence[float], buttons: Sequence[bool], prev_buttons: Sequence[bool],
                    hat: tuple[int, int] = (0, 0), m: GamepadMap = GamepadMap()) -> TeleopCommand:
    """Pure mapping of a gamepad state (and the previous buttons, for edges) to a command."""
    def pressed(i: int) -> bool:
        return i < len(buttons) and bool(buttons[i]) and not (i < len(prev_buttons) and prev_buttons[i])

    def trigger(i: int) -> float:  # rests at -1, fully pressed +1
        return (float(axes[i]) + 1.0) / 2.0 if i < len(axes) else 0.0

    d = m.deadzone
    motion = [-_axis(axes, m.left_y, d), -_axis(axes, m.left_x, d),
              trigger(m.right_trigger) - trigger(m.left_trigger),
              float(hat[0]), -_axis(axes, m.right_y, d), -_axis(axes, m.right_x, d)]
    motion[2] = 0.0 if abs(motion[2]) < d else motion[2]
    end = "success" if pressed(m.success) else "failure" if pressed(m.failure) else None
    return TeleopCommand(motion=np.array(motion), toggle_control=pressed(m.toggle_control),
                         gripper_toggle=pressed(m.gripper_toggle), rewind=pressed(m.rewind), end=end)


class GamepadDevice:
    """A gamepad through pygame's joystick API (no window needed: SDL's dummy video driver)."""

    def __init__(self, index: int = 0, mapping: GamepadMap | None = None) -> None:
        pygame = require("pygame", "gamepad")
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        pygame.display.init()
        pygame.joystick.init()
        count = pygame.joystick.get_count()
        if count <= index:
            raise TeleopUnavailable(f"no gamepad {index}: pygame sees {count} joystick(s); plug one in")
        self._pygame = pygame
        self._js = pygame.joystick.Joystick(index)
        self._js.init()
        self.mapping = mapping or GamepadMap()
        self._prev: list[bool] = []

    def poll(self) -> TeleopCommand:
        self._pygame.event.pump()
        js = self._js
        axes = [js.get_axis(i) for i in range(js.get_numaxes())]
        buttons = [bool(js.get_button(i)) for i in range(js.get_numbuttons())]
        hat = tuple(js.get_hat(0)) if js.get_numhats() else (0, 0)
        cmd = gamepad_command(axes, buttons, self._prev, hat, self.mapping)  # type: ignore[arg-type]
        self._prev = buttons
        return cmd

    def close(self) -> None:
        self._pygame.joystick.quit()


# SpaceMouse axes -> (dx, dy, dz, droll, dpitch, dyaw), as "[-]field" of pyspacemouse's state.
SPACEMOUSE_AXES = ("y", "-x", "z", "-roll", "-pitch", "-yaw")


def _buttons(state: Any) -> list[int]:
    """pyspacemouse 1.x states name the list `buttons`; its README and pyspacenavigator say `button`."""
    return list(getattr(state, "buttons", getattr(state, "button", [])))


def spacemouse_command(state: Any, prev_buttons: Sequence[int], axes: Sequence[str] = SPACEMOUSE_AXES,
                       deadzone: float = 0.1) -> TeleopCommand:
    """Pure mapping of a pyspacemouse state: left button = gripper toggle, right = take over / hand back."""
    motion = []
    for spec in axes:
        sign = -1.0 if spec.startswith("-") else 1.0
        v = sign * float(getattr(state, spec.lstrip("-")))
        motion.append(0.0 if abs(v) < deadzone else v)
    buttons = _buttons(state)

    def pressed(i: int) -> bool:
        return i < len(buttons) and bool(buttons[i]) and not (i < len(prev_buttons) and prev_buttons[i])

    return TeleopCommand(motion=np.array(motion), gripper_toggle=pressed(0), toggle_control=pressed(1))


class SpaceMouseDevice:
    """A 3Dconnexion SpaceMouse through pyspacemouse (HID); combine with the keyboard for rewind,
    end marks and quit (`CombinedDevice`)."""

    def __init__(self, axes: Sequence[str] = SPACEMOUSE_AXES) -> None:
        self._sm = require("pyspacemouse", "spacemouse")
        if not self._sm.open():
            raise TeleopUnavailable("pyspacemouse found no SpaceMouse (plugged in? HID permissions?)")
        self.axes = tuple(axes)
        self._prev: list[int] = []

    def poll(self) -> TeleopCommand:
        state = self._sm.read()
        cmd = spacemouse_command(state, self._prev, self.axes)
        self._prev = _buttons(state)
        return cmd

    def close(self) -> None:
        close = getattr(self._sm, "close", None)
        if callable(close):
            close()


class CombinedDevice:
    """Several devices as one (a SpaceMouse for motion, the keyboard for rewind / marks / quit)."""

    def __init__(self, *devices: TeleopDevice) -> None:
        self.devices = devices

    def poll(self) -> TeleopCommand:
        return merge_commands(d.poll() for d in self.devices)

    def close(self) -> None:
        for d in self.devices:
            d.close()


class ReplayDevice:
    """Plays a fixed list of commands, one per poll, then idles (scripted sessions and tests)."""

    def __init__(self, commands: Iterable[TeleopCommand]) -> None:
        self.commands = list(commands)
        self.polls = 0

    def poll(self) -> TeleopCommand:
        self.polls += 1
        return self.commands[self.polls - 1] if self.polls <= len(self.commands) else TeleopCommand()

    def close(self) -> None:
        pass
