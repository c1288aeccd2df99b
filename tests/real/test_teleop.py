"""Teleoperation devices (keyboard through a real pseudo-terminal, pure gamepad / SpaceMouse maps)
and the human Intervener on the real MuJoCo pick_place task."""

from __future__ import annotations

import os
import select
import sys
import termios
from collections import namedtuple
from collections.abc import Callable, Iterator

import numpy as np
import pytest

import sim.render  # noqa: F401  (headless GL backend before mujoco loads)
from real.session import HumanIntervener
from real.teleop import (
    CombinedDevice,
    GamepadDevice,
    GamepadMap,
    KeyboardDevice,
    ReplayDevice,
    SpaceMouseDevice,
    TeleopCommand,
    TeleopUnavailable,
    gamepad_command,
    keys_to_command,
    merge_commands,
    parse_keys,
    spacemouse_command,
)
from vla.interfaces import Intervener
from vla.registry import TASKS

IDLE = TeleopCommand()
TAKE = TeleopCommand(toggle_control=True)
REWIND = TeleopCommand(rewind=True)


def is_idle(cmd: TeleopCommand) -> bool:
    return not (cmd.moving or cmd.toggle_control or cmd.gripper_toggle or cmd.rewind or cmd.quit or cmd.end)


def test_parse_keys_letters_arrows_and_split_escapes() -> None:
    keys, tail = parse_keys("wA \x1b[A\x1b[D\x1bOB\rxq\x1b[15~g")
    assert keys == ["w", "a", "space", "up", "left", "down", "enter", "x", "q", "g"] and tail == ""
    keys, tail = parse_keys("d\x1b[")
    assert keys == ["d"] and tail == "\x1b["
    assert parse_keys(tail + "C") == (["right"], "")


def test_keys_to_command() -> None:
    cmd = keys_to_command(["w", "d", "r", "up", "left", "z"], speed=0.5)
    np.testing.assert_allclose(cmd.motion, [0.5, -0.5, 0.5, 0.5, 0.5, 0.5])
    assert not (cmd.toggle_control or cmd.rewind or cmd.quit) and cmd.end is None
    cmd = keys_to_command(["space", "g", "b", "enter"])
    assert cmd.toggle_control and cmd.gripper_toggle and cmd.rewind and cmd.end == "success" and not cmd.moving
    assert keys_to_command(["x"]).end == "failure" and keys_to_command(["q"]).quit
    assert keys_to_command(["w", "s"]).motion[0] == -1.0  # the latest press along an axis wins


def test_command_validation_and_merge() -> None:
    with pytest.raises(ValueError, match="unknown end mark 'done'"):
        TeleopCommand(end="done")
    with pytest.raises(ValueError, match="6 values"):
        TeleopCommand(motion=np.zeros(7))
    assert TeleopCommand(motion=[3, 0, 0, 0, 0, -2]).motion.tolist() == [1, 0, 0, 0, 0, -1]
    merged = merge_commands([TeleopCommand(motion=[0.5, 0, 0, 0, 0, 0], end="success"),
                             TeleopCommand(motion=[0.7, 0.2, 0, 0, 0, 0], rewind=True, end="failure")])
    np.testing.assert_allclose(merged.motion, [1.0, 0.2, 0, 0, 0, 0], atol=1e-6)
    assert merged.rewind and merged.end == "failure" and not merged.quit  # a failure mark wins
    both = CombinedDevice(ReplayDevice([TAKE]), ReplayDevice([TeleopCommand(quit=True)]))
    cmd = both.poll()
    assert cmd.toggle_control and cmd.quit
    assert is_idle(both.poll())


@pytest.fixture
def pty() -> Iterator[tuple[int, int]]:
    master, slave = os.openpty()
    yield master, slave
    os.close(master)
    os.close(slave)


def test_keyboard_device_through_a_pseudo_terminal(pty: tuple[int, int]) -> None:
    master, slave = pty
    before = termios.tcgetattr(slave)
    dev = KeyboardDevice(fd=slave, speed=0.5, hold=1)
    lflag = termios.tcgetattr(slave)[3]
    assert not lflag & termios.ICANON and not lflag & termios.ECHO  # cbreak: key by key, no echo
    assert lflag & termios.ISIG  # Ctrl-C still interrupts the session

    def send(data: bytes) -> TeleopCommand:
        os.write(master, data)
        assert select.select([slave], [], [], 2.0)[0], "the pty delivered nothing"
        return dev.poll()

    assert is_idle(dev.poll())  # nothing typed: no motion, no events
    cmd = send(b"w")
    assert cmd.motion.tolist() == [0.5, 0, 0, 0, 0, 0]
    assert dev.poll().motion[0] == 0.5  # held for `hold` polls (terminal auto-repeat gaps)
    assert not dev.poll().moving
    assert send(b" ").toggle_control
    assert send(b"\x1b[A").motion[4] == 0.5
    os.write(master, b"\x1b")  # an arrow split across two reads
    select.select([slave], [], [], 2.0)
    assert not dev.poll().toggle_control
    assert send(b"[D").motion[5] == 0.5
    assert send(b"G").gripper_toggle and send(b"b").rewind
    assert send(b"\r").end == "success" and send(b"x").end == "failure" and send(b"q").quit
    dev.close()
    assert termios.tcgetattr(slave) == before  # the terminal is restored


def test_keyboard_needs_a_terminal() -> None:
    r, w = os.pipe()
    try:
        with pytest.raises(TeleopUnavailable, match="needs a terminal"):
            KeyboardDevice(fd=r)
    finally:
        os.close(r)
        os.close(w)


def test_gamepad_map_edges_deadzone_triggers() -> None:
    m = GamepadMap()
    axes = [0.05, -0.8, -1.0, 0.5, 0.0, 1.0]  # left stick pushed forward, right trigger fully pressed
    buttons = [True, False, False, False, False, False, False, False]
    cmd = gamepad_command(axes, buttons, [False] * 8, (1, 0), m)
    np.testing.assert_allclose(cmd.motion, [0.8, 0.0, 1.0, 1.0, 0.0, -0.5])  # 0.05 is inside the deadzone
    assert cmd.toggle_control and not cmd.rewind
    assert not gamepad_command(axes, buttons, buttons, (0, 0), m).toggle_control  # held, not pressed again
    start = [False] * 7 + [True]
    assert gamepad_command([0.0] * 6, start, [False] * 8).end == "success"
    assert gamepad_command([], [], []).motion.tolist() == [0.0] * 6  # a pad with fewer axes


def test_spacemouse_map() -> None:
    State = namedtuple("State", "t x y z roll pitch yaw buttons")
    state = State(0.0, 0.5, 0.3, -0.2, 0.05, 0.4, -0.6, [1, 0])
    cmd = spacemouse_command(state, [0, 0])
    np.testing.assert_allclose(cmd.motion, [0.3, -0.5, -0.2, 0.0, -0.4, 0.6])
    assert cmd.gripper_toggle and not cmd.toggle_control
    assert not spacemouse_command(state, [1, 0]).gripper_toggle
    assert spacemouse_command(state._replace(buttons=[0, 1]), [0, 0]).toggle_control


@pytest.mark.parametrize(("module", "make"), [("pygame", GamepadDevice), ("pyspacemouse", SpaceMouseDevice)])
def test_optional_devices_name_the_extra(monkeypatch: pytest.MonkeyPatch, module: str,
                                         make: Callable[[], object]) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(TeleopUnavailable, match=rf"'{module}' package.*vla-stack\[teleop\]"):
        make()


# ---- HumanIntervener on the real task ------------------------------------------------------------------
@pytest.fixture(scope="module")
def env():
    e = TASKS.make("pick_place", cameras=(), obs_mode="state")
    yield e
    e.close()


SIDEWAYS = np.array([0, 0.5, 0, 0, 0, 0, -1], np.float32)  # the "policy": drift sideways, gripper open


def drive(env, inter, commands: list[TeleopCommand], policy_action: np.ndarray = SIDEWAYS,
          steps: int | None = None) -> tuple[str, list[np.ndarray], list[np.ndarray]]:
    """The session's per-step contract; returns flags ('p' policy, 'H' human, 'R' rewind), the EE
    position before each step and the actions executed."""
    inter.device = ReplayDevice(commands)
    obs, info = env.reset(seed=3)
    inter.reset()
    flags, path, actions = [], [], []
    for _ in range(steps or len(commands)):
        info["policy_action"] = policy_action
        if inter.wants_control(obs, info):
            action, recovery = inter.act(obs, info)
            flags.append("R" if recovery else "H")
        elif inter.episode_done:
            break
        else:
            action = policy_action
            flags.append("p")
        path.append(env.eef_pos())
        actions.append(np.asarray(action))
        obs, _, _, _, info = env.step(action)
    return "".join(flags), path, actions


def test_takeover_move_rewind_hand_back(env) -> None:
    inter = HumanIntervener(ReplayDevice([]), env, mode="hg_dagger")
    assert isinstance(inter, Intervener)
    forward = TeleopCommand(motion=[1, 0, 0, 0, 0, 0])
    commands = [IDLE] * 8 + [TAKE] + [forward] * 4 + [REWIND] + [IDLE] * 25 + [TAKE] + [IDLE] * 3
    flags, path, actions = drive(env, inter, commands)
    # Policy, the person moves, rewind (recovery), the person holds still, then the policy again.
    n_rec = flags.count("R")
    assert flags.startswith("p" * 8 + "HHHHH") and n_rec >= 5
    handback = flags.index("p", 13)
    assert flags[13:13 + n_rec] == "R" * n_rec and set(flags[13 + n_rec:handback]) == {"H"}
    assert handback == 39 and flags[handback:] == "pppp"  # the toggle's step is already the policy's
    assert inter.takeovers == [(9, "requested")] and not inter.episode_done
    # The person's steps carry the device motion; the rewind first undoes the forward move.
    np.testing.assert_allclose(actions[9][:6], [1, 0, 0, 0, 0, 0])
    assert actions[13][0] < -0.5
    # The rewind drove back along the recorded path: after it the EE is near the start of the
    # episode, far from where the person left it.
    end_of_rewind = path[13 + n_rec]
    assert np.linalg.norm(end_of_rewind - path[0]) < 0.03
    assert np.linalg.norm(path[13] - path[0]) > 0.1
    # All human and rewind steps keep the gripper as the policy had it (open).
    assert all(a[6] == -1.0 for a in actions)


def test_rewind_stops_on_motion_and_resumes_further_back(env) -> None:
    inter = HumanIntervener(ReplayDevice([]), env, mode="hg_dagger")
    commands = [IDLE] * 10 + [REWIND] + [IDLE] * 2 + [TeleopCommand(motion=[0, 0, 0.5, 0, 0, 0])] + [REWIND] \
        + [IDLE] * 20
    flags, path, _ = drive(env, inter, commands)
    # Rewind pressed while the policy acted takes over at once; a motion stops it (the person
    # drives), a second rewind continues along what is left of the path.
    assert flags[:10] == "p" * 10 and flags[10:13] == "RRR" and flags[13] == "H" and flags[14] == "R"
    assert inter.takeovers == [(11, "requested")]
    assert np.linalg.norm(path[-1][:2] - path[0][:2]) < 0.03


def test_rac_hand_back_ends_the_episode_and_marks(env) -> None:
    inter = HumanIntervener(ReplayDevice([]), env, mode="rac")
    flags, _, _ = drive(env, inter, [IDLE] * 3 + [TAKE, IDLE, TAKE] + [IDLE] * 5)
    assert flags == "pppHH" and inter.episode_done and inter.outcome is None
    flags, _, _ = drive(env, inter, [IDLE] * 4 + [TeleopCommand(end="success")] + [IDLE] * 5)
    assert flags == "pppp" and inter.episode_done and inter.outcome == "success" and not inter.quit_requested
    flags, _, _ = drive(env, inter, [IDLE, TeleopCommand(quit=True)] + [IDLE] * 5)
    assert flags == "p" and inter.quit_requested and inter.outcome is None


def test_takeover_keeps_a_closed_gripper_and_toggles(env) -> None:
    inter = HumanIntervener(ReplayDevice([]), env, mode="hg_dagger")
    closed = np.array([0, 0, 0, 0, 0, 0, 1], np.float32)
    _, _, actions = drive(env, inter, [IDLE, TAKE, IDLE, TeleopCommand(gripper_toggle=True), IDLE], closed)
    assert [a[6] for a in actions] == [1.0, 1.0, 1.0, -1.0, -1.0]
    with pytest.raises(ValueError, match="unknown intervener mode 'dagger'"):
        HumanIntervener(ReplayDevice([]), env, mode="dagger")
