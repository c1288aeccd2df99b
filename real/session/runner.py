"""`run_session`: env, policy, supervisor and store for a whole session; progress, camera window,
pacing, videos, and clean stops (see the package docstring)."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from real.session.episode import EpisodeRecord, StepStatus, deferred_interrupt, run_supervised_episode
from real.session.human import HumanIntervener
from real.teleop import KEYBOARD_HELP, TeleopDevice
from vla.data.schema import StoreSchema, closest
from vla.evaluation import EnvSettings

DEVICES = ("keyboard", "gamepad", "spacemouse", "scripted")
MODES = ("rac", "hg_dagger")
SESSION_SOURCES = ("rollout", "intervention")


@dataclass
class SessionConfig(EnvSettings):
    """A correction session: its env (vla.evaluation.EnvSettings: task, cameras, image_size, horizon,
    obs_mode) and what a supervised session needs."""

    ckpt: str = ""  # checkpoint folder, ONNX export folder, or zero | random (tests, dry runs)
    device: str = "keyboard"  # keyboard | gamepad | spacemouse | scripted
    mode: str = "rac"  # rac: the episode ends after the intervention; hg_dagger: hand back to the policy
    store: str = ""  # EpisodeStore path (created if missing, else appended to)
    episodes: int = 10
    seed_start: int = 0  # first seed of a new store; later sessions continue after the stored ones
    n_action_steps: int = 8  # actions executed from each chunk before the next inference
    policy_version: int = 0
    policy_seed: int = 0
    control_hz: float | None = None  # None: 20 Hz with a person, unpaced with the scripted intervener
    show: bool = True  # camera window, when a display and an OpenCV with GUI support exist
    video_dir: str = ""  # write <task>_seed<seed>.mp4 of each stored episode here
    video_size: int = 256  # their frames: the task's viewing camera at this size (0: the policy's cameras)
    keyboard_speed: float = 0.6  # fraction of full-scale motion per key
    max_rewind_steps: int = 200  # a person's rewind stops after this many steps
    subtask_timeout: int = 120  # scripted intervener: steps in one sub-task before it takes over
    disagreement_threshold: float | None = None  # scripted intervener: take over on policy/expert mismatch
    # A real arm over ROS 2 instead of the simulator: a deploy YAML (topics, joint limits, cameras, rate;
    # real/session/ros_env.py). `task` is then only the name the episodes are stored under.
    robot: str = ""
    robot_reset_service: str = ""  # std_srvs/Trigger called before each episode ("": the operator resets)
    robot_status_topic: str = "/task/status"  # JSON {success, done} from a simulated arm; "" for none

    def validate(self) -> None:
        """The values given (run on every load, so `vla config show session` works without paths)."""
        if self.device not in DEVICES:
            raise ValueError(f"unknown device '{self.device}'" + closest(self.device, DEVICES))
        if self.mode not in MODES:
            raise ValueError(f"unknown mode '{self.mode}'" + closest(self.mode, MODES))
        self.check_env()
        if self.episodes < 1 or self.n_action_steps < 1:
            raise ValueError(f"episodes and n_action_steps must be >= 1, got {self.episodes}, {self.n_action_steps}")
        if self.robot and self.device == "scripted":
            raise ValueError("device=scripted is the simulator's expert, which needs the simulator's state; a session "
                             "over ROS (robot=...) takes keyboard, gamepad or spacemouse (tests: intervener_factory)")

    def check_runnable(self) -> None:
        """What a session needs besides valid values: a policy and a store."""
        self.validate()
        if not self.ckpt:
            raise ValueError("no policy given: pass --ckpt with a checkpoint or ONNX export folder")
        if not self.store:
            raise ValueError("no EpisodeStore given: pass --store OUT.zarr")

    @property
    def hz(self) -> float:
        if self.control_hz is not None:
            return float(self.control_hz)
        return 0.0 if self.device == "scripted" else 20.0


@dataclass
class SessionResult:
    episodes: list[EpisodeRecord] = field(default_factory=list)  # stored episodes
    dropped_seed: int | None = None  # the episode in progress when the session stopped early
    quit: bool = False  # the person pressed quit
    interrupted: bool = False  # Ctrl-C


def next_seed(store: Any, task: str, seed_start: int) -> int:
    """Continue after this task's session episodes already stored (demos use their own seeds)."""
    table = store.table()
    mask = (table.task == task) & np.isin(table.source, SESSION_SOURCES)
    return max(seed_start, int(table.seed[mask].max()) + 1) if mask.any() else seed_start


class Viewer:
    """The camera view in an OpenCV window, only where a display exists (headless: a no-op)."""

    def __init__(self, enabled: bool) -> None:
        self.cv2: Any = None
        if enabled and (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            with contextlib.suppress(ImportError):
                import cv2

                self.cv2 = cv2

    def show(self, images: dict[str, np.ndarray], text: str) -> None:
        if self.cv2 is None or not images:
            return
        from vla.video import tile_cameras

        cv2 = self.cv2
        frame = np.ascontiguousarray(tile_cameras(images)[:, :, ::-1])
        frame = cv2.resize(frame, None, fx=4, fy=4, interpolation=cv2.INTER_NEAREST)
        cv2.putText(frame, text, (8, 24), cv2.FONT_HERSHEY_SIMPLEX, 0.7, (0, 255, 255), 2)
        try:
            cv2.imshow("vla session", frame)
            cv2.waitKey(1)
        except cv2.error:  # an OpenCV built without GUI support
            self.cv2 = None

    def close(self) -> None:
        if self.cv2 is not None:
            with contextlib.suppress(Exception):
                self.cv2.destroyAllWindows()


def make_device(cfg: SessionConfig) -> TeleopDevice:
    """The person's device; a gamepad or SpaceMouse gets the keyboard's keys too when a terminal exists."""
    from real.teleop import CombinedDevice, GamepadDevice, KeyboardDevice, SpaceMouseDevice

    if cfg.device == "keyboard":
        return KeyboardDevice(speed=cfg.keyboard_speed)
    device: TeleopDevice = GamepadDevice() if cfg.device == "gamepad" else SpaceMouseDevice()
    if sys.stdin.isatty():
        return CombinedDevice(device, KeyboardDevice(speed=cfg.keyboard_speed))
    return device


def make_intervener(cfg: SessionConfig, env: Any, device: TeleopDevice | None = None) -> Any:
    if cfg.device == "scripted":
        from sim.intervener import ExpertIntervener
        from sim.policies import make_expert

        return ExpertIntervener(env, make_expert(env, seed=cfg.seed_start), mode=cfg.mode,
                                subtask_timeout=cfg.subtask_timeout,
                                disagreement_threshold=cfg.disagreement_threshold)
    return HumanIntervener(device or make_device(cfg), env, mode=cfg.mode, max_rewind_steps=cfg.max_rewind_steps)


def open_store(path: str | Path, env: Any, seed: int) -> Any:
    """Append to the store at `path` (or create it with the env's real observation shapes);
    an existing store must match them."""
    from vla.data.store import open_for_append

    obs, _ = env.reset(seed=seed)
    schema = StoreSchema(cameras={c: img.shape[:2] for c, img in obs["images"].items()},
                         state_dim=int(obs["state"].shape[0]), action_dim=int(env.action_space.shape[0]),
                         fps=float(env.metadata.get("render_fps", 20.0)))
    try:
        return open_for_append(path, schema, "this session's env")
    except ValueError as err:
        raise ValueError(f"{err} (set cameras= / image_size= / obs_mode=, or use another store)") from None


def make_robot_env(cfg: SessionConfig) -> Any:
    """The arm of the deploy YAML `cfg.robot` over ROS 2, as the session's env."""
    from real.config import load_deploy_config
    from real.session.ros_env import RosArmEnv

    if not Path(cfg.robot).is_file():
        raise FileNotFoundError(f"robot={cfg.robot}: no such deploy config (see configs/deploy/)")
    return RosArmEnv(load_deploy_config(cfg.robot), task=cfg.task, horizon=cfg.horizon or 300,
                     reset_service=cfg.robot_reset_service, status_topic=cfg.robot_status_topic)


def session_policy(spec: str, env: Any, seed: int) -> Any:
    """The policy a session runs: any policy spec (vla.policy.specs), or in a simulated session one of
    the simulator's built-ins (zero, random, expert), which act in its env."""
    from vla.policy.specs import load_spec, wrapper_spec

    if wrapper_spec(spec) is not None or Path(spec).is_dir():
        return load_spec(spec, seed=seed)
    from sim.policies import load_policy  # a built-in acts in a simulator's env

    return load_policy(spec, env, seed=seed)


def run_session(cfg: SessionConfig, *, intervener_factory: Callable[[Any], Any] | None = None,
                progress: bool = True) -> SessionResult:
    """Run `cfg.episodes` supervised episodes into `cfg.store`. `intervener_factory(env)` replaces
    the supervisor the config names (tests drive a `HumanIntervener` with a `ReplayDevice`).
    Everything that can fail on bad input (task, policy, device) is checked before the store is
    created, so a typo leaves no empty store behind."""
    from vla.registry import TASKS

    cfg.check_runnable()
    if cfg.robot:
        if cfg.perturb != "none":
            raise ValueError(f"perturb={cfg.perturb}: perturbations apply to simulated sessions; a real arm "
                             "(robot=...) brings its own sensors' errors")
        env = make_robot_env(cfg)
    else:
        TASKS.get(cfg.task)  # an unknown task fails here, naming the valid ones
        env = TASKS.make(cfg.task, **cfg.env_kwargs())
        if cfg.perturb != "none":  # a simulated session under a real arm's sensor errors
            from sim.perturb import perturbed

            env = perturbed(env, cfg.perturb, cfg.env_kwargs()["obs_mode"], cfg.task)
    store = intervener = None
    try:
        policy = session_policy(cfg.ckpt, env, seed=cfg.policy_seed)
        intervener = intervener_factory(env) if intervener_factory else make_intervener(cfg, env)
        store = open_store(cfg.store, env, cfg.seed_start)
        return _loop(cfg, env, policy, intervener, store, progress)
    finally:
        device = getattr(intervener, "device", None)
        if device is not None:
            device.close()  # restores the terminal
        if store is not None:
            store.close()
        env.close()


def _loop(cfg: SessionConfig, env: Any, policy: Any, intervener: Any, store: Any, progress: bool) -> SessionResult:
    from vla.progress import progress as tqdm
    from vla.video import write_mp4

    result = SessionResult()
    first = next_seed(store, cfg.task, cfg.seed_start)
    viewer = Viewer(cfg.show)
    bar = tqdm(total=cfg.episodes, desc=f"session {cfg.task}", disable=not progress, file=sys.stderr)
    if progress and cfg.device != "scripted":
        bar.write(KEYBOARD_HELP if cfg.device == "keyboard" else f"{cfg.device}: see real/teleop.py for the "
                  "button map; keyboard keys also work in this terminal\n" + KEYBOARD_HELP, file=sys.stderr)
    period = 1.0 / cfg.hz if cfg.hz > 0 else 0.0
    state = {"next": time.perf_counter(), "shown": 0.0}

    def on_step(s: StepStatus) -> None:
        now = time.perf_counter()
        if now - state["shown"] > 0.1:
            state["shown"] = now
            bar.set_postfix_str(f"{s.mode:6s} step {s.step:4d} {s.subtask}")
            viewer.show(s.images, f"{s.mode} {s.step} {s.subtask}")
        if period:
            state["next"] += period
            time.sleep(max(0.0, state["next"] - time.perf_counter()))
            state["next"] = max(state["next"], time.perf_counter() - period)

    try:
        for seed in range(first, first + cfg.episodes):
            frames: list[np.ndarray] | None = [] if cfg.video_dir else None
            stored = False
            try:
                state["next"] = time.perf_counter()
                episode, record = run_supervised_episode(env, policy, intervener, seed, task=cfg.task,
                                              n_action_steps=cfg.n_action_steps,
                                              policy_version=cfg.policy_version, on_step=on_step, frames=frames,
                                              video_size=cfg.video_size)
                if episode is None:
                    result.quit = bool(getattr(intervener, "quit_requested", False))
                    if result.quit:
                        result.dropped_seed = seed
                        break
                    continue  # ended before any step: nothing to store
                with deferred_interrupt() as interrupted:
                    record.index = store.append_episode(episode)
                stored = True
                result.episodes.append(record)
                if frames:
                    record.video = str(write_mp4(Path(cfg.video_dir) / f"{cfg.task}_seed{seed}.mp4", frames))
                bar.update(1)
                bar.write(f"seed {seed}: {'success' if record.success else 'failure'}, {record.length} steps, "
                          f"{record.intervention_steps} by the supervisor ({record.recovery_steps} rewind) "
                          f"-> episode {record.index} ({record.source})", file=sys.stderr)
                if interrupted:
                    raise KeyboardInterrupt
            except KeyboardInterrupt:
                result.interrupted = True
                result.dropped_seed = None if stored else seed
                break
    finally:
        bar.close()
        viewer.close()
    return result
