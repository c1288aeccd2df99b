"""What a real arm's sensors and actuators do to a policy's inputs and outputs: named perturbations at a
severity in physical units, the presets that combine them, and their per-episode state.

`NAME[:SEVERITY],...` (e.g. `pose_noise:2,action_latency:1`) or a preset name (`none`, `realistic`,
`vla/configs/perturb/*.yaml`), optionally scaled (`realistic:0.5` halves every severity). A severity
is in the unit its perturbation names (millimetres, degrees, control steps, a probability, a fraction),
so `pose_noise:2` means 2 mm in the evaluator, in the executor benchmark and in the ROS bridge alike.

Where a perturbation applies (its `group`):
  pose     the object poses a pose estimator reports, before the state's object features are computed
           from them (tasks whose features come from poses: vla.robot.objects)
  proprio  the arm's own state (end-effector position, orientation, fingers)
  image    every camera frame (after rendering)
  camera   every camera's extrinsics (the simulator's camera moves, so parallax is real)
  scene    the scene itself (the surfaces' colours; in the simulator)
  action   the commanded action before the arm executes it
  timing   the control loop's ticks

The math is here, as pure functions over numpy arrays plus `Perturber`, the per-episode state (a
bias drawn once, latency buffers, the last delivered pose). Every kind draws from its own random
stream seeded by the episode's seed, so the same seeds give the same perturbation whichever other
kinds run beside it: comparisons across presets and methods stay paired by seed.

Image corruptions follow the common-corruption benchmarks (Hendrycks & Dietterich, arXiv 1903.12261)
at the small severities a lab sees; the pose, latency and dropout models are what pose estimators
such as FoundationPose (arXiv 2312.08344) and fiducial markers deliver; ours fills the gap that no
robot-learning stack we know evaluates policies under all of these by name.
"""

from __future__ import annotations

import zlib
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from vla.data.schema import closest


@dataclass(frozen=True)
class Kind:
    name: str
    group: str
    unit: str
    what: str
    per_episode: bool = False  # drawn once per episode (a bias, a gain) rather than every step


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("pose_noise", "pose", "mm", "Gaussian position noise per axis, every step"),
    Kind("pose_rot_noise", "pose", "deg", "rotation noise (random axis, Gaussian angle), every step"),
    Kind("pose_bias", "pose", "mm", "a position offset of this length in a random direction, per episode",
         per_episode=True),
    Kind("pose_latency", "pose", "steps", "poses delivered this many control steps late"),
    Kind("pose_dropout", "pose", "probability", "chance per step that the estimator re-sends its last pose"),
    Kind("proprio_noise", "proprio", "mm", "Gaussian noise on the hand's position and fingers, every step"),
    Kind("camera_shift", "camera", "mm", "every camera moved this far in a random direction, per episode",
         per_episode=True),
    Kind("camera_rot", "camera", "deg", "every camera turned by this angle about a random axis, per episode",
         per_episode=True),
    Kind("surface_colour", "scene", "fraction", "every surface (table, floor, arm, objects) recoloured by "
         "per-channel gains from [1 - s, 1 + s], each surface its own, per episode", per_episode=True),
    Kind("distractor", "scene", "probability", "chance per episode that another cube (a colour no task object "
         "has) stands on the table, at least 8 cm from the task's objects", per_episode=True),
    Kind("lighting", "image", "fraction", "brightness gain drawn from [1 - s, 1 + s], per episode",
         per_episode=True),
    Kind("colour", "image", "fraction", "per-channel (white balance) gains from [1 - s, 1 + s], per episode",
         per_episode=True),
    Kind("blur", "image", "pixels", "Gaussian blur of this standard deviation (focus, motion)"),
    Kind("pixel_noise", "image", "levels", "Gaussian sensor noise, standard deviation in 0-255 levels"),
    Kind("action_latency", "action", "steps", "actions executed this many control steps late"),
    Kind("action_noise", "action", "fraction", "Gaussian noise on each action dimension, of its full scale"),
    Kind("action_gain", "action", "fraction", "the arm moves (1 + g) times the command, g from [-s, s] per "
         "episode (controller tracking error)", per_episode=True),
    Kind("rate_jitter", "timing", "probability", "chance per tick that the command arrives late and the "
         "previous one runs for another tick"),
)}
# colours no task object has (pick_place's red cube and green zone, sort's and stack3's cubes are red, green, blue)
DISTRACTOR_COLOURS = ((0.9, 0.75, 0.1), (0.6, 0.3, 0.7), (0.95, 0.5, 0.1), (0.5, 0.5, 0.5))
GROUPS = ("pose", "proprio", "camera", "scene", "image", "action", "timing")
PROPRIO = 9  # the native arm's state: hand position 3, orientation 4, fingers 2 (what `proprio` perturbs)


def parse_perturb(text: str, presets: Mapping[str, Mapping[str, float]] | None = None) -> dict[str, float]:
    """`NAME[:SEVERITY],...` -> {kind: severity}. A NAME is a kind (severity required) or a preset (an
    optional severity scales all of its kinds). Later entries override earlier ones; severity 0 drops
    a kind. Raises ValueError naming the bad entry."""
    presets = load_presets() if presets is None else presets
    out: dict[str, float] = {}
    for raw in (p.strip() for p in str(text).split(",")):
        if not raw:
            continue
        name, _, sev = raw.partition(":")
        name = name.strip()
        try:
            value = float(sev) if sev.strip() else None
        except ValueError:
            raise ValueError(f"perturb: severity of '{name}' must be a number, got '{sev}'") from None
        if value is not None and (not np.isfinite(value) or value < 0):
            raise ValueError(f"perturb: severity of '{name}' must be finite and >= 0, got {value}")
        if name in presets:
            # a scaled preset's latencies go to the nearest whole step (0.5 x 1 step is 1)
            out.update(scaled(presets[name], 1.0 if value is None else value))
        elif name in KINDS:
            if value is None:
                raise ValueError(f"perturb: '{name}' needs a severity in {KINDS[name].unit}, e.g. {name}:1")
            out[name] = value
        else:
            raise ValueError(f"perturb: unknown perturbation or preset '{name}'"
                             + closest(name, [*KINDS, *presets]))
    for kind, s in out.items():
        if KINDS[kind].unit == "probability" and s > 1:
            raise ValueError(f"perturb: {kind} is a probability, got {s}")
        if KINDS[kind].unit == "steps" and s != int(s):
            raise ValueError(f"perturb: {kind} counts control steps, got {s}")
    return {k: s for k, s in out.items() if s > 0}


def load_presets() -> dict[str, dict[str, float]]:
    """The named presets: vla/configs/perturb/<name>.yaml, each {kind: severity} (`none` is empty)."""
    import yaml

    from vla.config import CONFIG_DIR

    presets: dict[str, dict[str, float]] = {"none": {}}
    for f in sorted((CONFIG_DIR / "perturb").glob("*.yaml")):
        data = yaml.safe_load(f.read_text()) or {}
        bad = [k for k in data if k not in KINDS]
        if bad:
            raise ValueError(f"{f.name}: unknown perturbation '{bad[0]}'" + closest(bad[0], list(KINDS)))
        presets[f.name[:-5]] = {k: float(v) for k, v in data.items()}
    return presets


def scaled(kinds: Mapping[str, float], factor: float) -> dict[str, float]:
    """Every severity times `factor` (latencies to the nearest whole step): one point of a sweep."""
    out = {}
    for k, s in kinds.items():
        v = float(s) * float(factor)
        out[k] = float(np.floor(v + 0.5)) if KINDS[k].unit == "steps" else v
    return {k: v for k, v in out.items() if v > 0}


def spec_text(kinds: Mapping[str, float]) -> str:
    """The `NAME:SEVERITY,...` text of `kinds` (`none` when empty): what `parse_perturb` reads back."""
    return ",".join(f"{k}:{s:g}" for k, s in sorted(kinds.items())) or "none"


def groups_of(kinds: Mapping[str, float]) -> set[str]:
    return {KINDS[k].group for k in kinds}


# ---- pure functions ---------------------------------------------------------------------------------

def random_unit(rng: np.random.Generator, n: int = 3) -> np.ndarray:
    v = rng.normal(size=n)
    return v / max(float(np.linalg.norm(v)), 1e-12)


def axis_angle_quat(axis: np.ndarray, angle_rad: float) -> np.ndarray:
    """Quaternion (xyzw) of a rotation by `angle_rad` about the unit `axis`."""
    h = 0.5 * angle_rad
    return np.concatenate([np.sin(h) * np.asarray(axis, np.float64), [np.cos(h)]])


def quat_mul_xyzw(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a * b of quaternions in xyzw order (broadcast over leading dimensions)."""
    ax, ay, az, aw = np.moveaxis(np.asarray(a, np.float64), -1, 0)
    bx, by, bz, bw = np.moveaxis(np.asarray(b, np.float64), -1, 0)
    return np.stack([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz], -1)


def turned(q: np.ndarray, sd_deg: float, rng: np.random.Generator) -> np.ndarray:
    """Quaternion q (xyzw) turned about a random axis by a Gaussian angle of standard deviation `sd_deg`."""
    return quat_mul_xyzw(axis_angle_quat(random_unit(rng), np.deg2rad(rng.normal(0.0, sd_deg))), q)


def noisy_proprio(proprio: np.ndarray, sd_m: float, rng: np.random.Generator) -> np.ndarray:
    """The arm's state with Gaussian noise of `sd_m` metres on the hand's position and the fingers."""
    out = np.array(proprio, np.float64, copy=True)
    out[:3] += rng.normal(0.0, sd_m, 3)
    out[7:9] += rng.normal(0.0, sd_m, len(out[7:9]))
    return out


def gaussian_kernel(sigma: float) -> np.ndarray:
    radius = max(1, int(np.ceil(3 * sigma)))
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    k = np.exp(-0.5 * (x / sigma) ** 2)
    return k / k.sum()


def blur_image(img: np.ndarray, sigma: float) -> np.ndarray:
    """Separable Gaussian blur of an H x W x C float image, edges repeated."""
    if sigma <= 0:
        return img
    k = gaussian_kernel(sigma)
    r = len(k) // 2
    out = np.pad(img, ((r, r), (0, 0), (0, 0)), mode="edge")
    out = sum(k[i] * out[i:i + img.shape[0]] for i in range(len(k)))
    out = np.pad(out, ((0, 0), (r, r), (0, 0)), mode="edge")
    return sum(k[i] * out[:, i:i + img.shape[1]] for i in range(len(k)))


def corrupt_image(img: np.ndarray, gain: np.ndarray | float, blur: float, noise_std: float,
                  rng: np.random.Generator) -> np.ndarray:
    """uint8 image with brightness/colour `gain` (scalar or per channel), blur and sensor noise applied."""
    x = img.astype(np.float64) * gain
    x = blur_image(x, blur)
    if noise_std > 0:
        x = x + rng.normal(0.0, noise_std, size=x.shape)
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


# ---- per-episode state ------------------------------------------------------------------------------

def draw_severities(kinds: Mapping[str, float], rng: np.random.Generator) -> dict[str, float]:
    """Domain randomisation's per-episode severities: each kind's drawn uniformly from [0, its severity]
    (a whole number of steps from 0..s for latencies), so the episodes span clean to the full severity."""
    out = {}
    for k, s in sorted(kinds.items()):
        out[k] = float(rng.integers(0, int(s) + 1)) if KINDS[k].unit == "steps" else float(rng.uniform(0.0, s))
    return out


class Perturber:
    """One episode's perturbation state. `reset(seed)` at every episode start, then per step
    `poses`, `proprio`, `images` on what the robot senses and `action` on what it commands.
    `randomize=True` (domain randomisation): every episode draws its own severities (`draw_severities`)
    up to `kinds`' from a stream of its own, so the perturbations' own draws stay as they were."""

    def __init__(self, kinds: Mapping[str, float], randomize: bool = False) -> None:
        unknown = [k for k in kinds if k not in KINDS]
        if unknown:
            raise ValueError(f"unknown perturbation '{unknown[0]}'" + closest(unknown[0], list(KINDS)))
        self.limits = {k: float(s) for k, s in kinds.items() if s > 0}
        self.kinds = dict(self.limits)
        self.randomize = bool(randomize)
        self.seed = 0
        self.reset(0)

    def s(self, kind: str) -> float:
        return self.kinds.get(kind, 0.0)

    def active(self, group: str) -> bool:
        return any(KINDS[k].group == group for k in self.kinds)

    def reset(self, seed: int) -> None:
        self.seed = int(seed)
        self.rng = {k: np.random.default_rng([self.seed, zlib.crc32(k.encode())]) for k in KINDS}
        if self.randomize:
            self.kinds = draw_severities(self.limits, np.random.default_rng([self.seed, zlib.crc32(b"randomize")]))
        self.pose_bias = (random_unit(self.rng["pose_bias"]) * self.s("pose_bias") * 1e-3)
        lo, hi = 1 - self.s("lighting"), 1 + self.s("lighting")
        self.light_gain = float(self.rng["lighting"].uniform(lo, hi))
        c = self.s("colour")
        self.colour_gain = self.rng["colour"].uniform(1 - c, 1 + c, size=3)
        g = self.s("action_gain")
        self.action_gain = 1.0 + float(self.rng["action_gain"].uniform(-g, g))
        self.camera_offset = random_unit(self.rng["camera_shift"]) * self.s("camera_shift") * 1e-3
        self.camera_rot = axis_angle_quat(random_unit(self.rng["camera_rot"]), np.deg2rad(self.s("camera_rot")))
        r = self.rng["distractor"]
        self.distractor = bool(r.random() < self.s("distractor"))
        # where and what colour: candidates in the task's object area, the first far enough from its objects wins
        self.distractor_xy = r.uniform([-0.12, -0.22], [0.15, 0.22], size=(32, 2))
        self.distractor_rgb = DISTRACTOR_COLOURS[int(r.integers(len(DISTRACTOR_COLOURS)))]
        self._pose_queue: deque[np.ndarray] = deque()
        self._last_pose: np.ndarray | None = None
        self._action_queue: deque[np.ndarray] = deque()
        self._last_action: np.ndarray | None = None

    def poses(self, poses: np.ndarray) -> np.ndarray:
        """[N, 7] world poses (position, quaternion xyzw) -> what the estimator delivers this step."""
        p = np.array(poses, np.float64, copy=True)
        p[:, :3] += self.pose_bias
        if self.s("pose_noise"):
            p[:, :3] += self.rng["pose_noise"].normal(0.0, self.s("pose_noise") * 1e-3, size=(len(p), 3))
        if self.s("pose_rot_noise"):
            for i in range(len(p)):
                p[i, 3:7] = turned(p[i, 3:7], self.s("pose_rot_noise"), self.rng["pose_rot_noise"])
        lag = int(self.s("pose_latency"))
        if lag:
            self._pose_queue.append(p)
            p = self._pose_queue[0] if len(self._pose_queue) <= lag else self._pose_queue.popleft()
            # until the first measurement comes through, the estimator has only the oldest one
        if self._last_pose is not None and self.s("pose_dropout") and \
                self.rng["pose_dropout"].random() < self.s("pose_dropout"):
            p = self._last_pose
        self._last_pose = p
        return p

    def surface_gains(self, n: int) -> np.ndarray:
        """[n, 3] per-channel colour gains of the scene's n surfaces this episode (ones when off); asked once
        per episode, after `reset`."""
        c = self.s("surface_colour")
        return 1.0 + c * (2.0 * self.rng["surface_colour"].random((n, 3)) - 1.0)

    def proprio(self, proprio: np.ndarray) -> np.ndarray:
        """The arm's state (hand position 3, orientation 4, fingers 2; the native arm's layout)."""
        if self.s("proprio_noise"):
            return noisy_proprio(proprio, self.s("proprio_noise") * 1e-3, self.rng["proprio_noise"])
        return np.array(proprio, np.float64, copy=True)

    def images(self, images: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if not self.active("image"):
            return dict(images)
        gain = self.light_gain * self.colour_gain
        return {c: corrupt_image(im, gain, self.s("blur"), self.s("pixel_noise"), self.rng["pixel_noise"])
                for c, im in images.items()}

    def action(self, action: np.ndarray, low: float = -1.0, high: float = 1.0) -> np.ndarray:
        """The commanded action -> what the arm executes this tick. Dimensions 0-5 move the hand (gain and
        noise apply), the last one is the gripper (noise only)."""
        a = np.array(action, np.float64, copy=True)
        moving = slice(0, min(6, len(a)))
        a[moving] *= self.action_gain
        if self.s("action_noise"):
            a += self.rng["action_noise"].normal(0.0, self.s("action_noise") * (high - low) / 2, len(a))
        a = np.clip(a, low, high)
        hold = np.zeros_like(a)  # before the first command arrives the arm holds, with the gripper as told
        hold[6:] = a[6:]
        return self._late(a, hold)

    def joint_target(self, target: np.ndarray, current: np.ndarray, unit_rad: float) -> np.ndarray:
        """A joint-position command (arm joints, then the gripper) -> what the motors get this tick, for a
        position-controlled arm (the ROS bridge): the arm's motion from `current` scaled by the gain, noise of
        `action_noise` x `unit_rad` (the joint motion one unit of the hand's action makes), then latency and
        late ticks as for `action`."""
        t = np.array(target, np.float64, copy=True)
        cur = np.asarray(current, np.float64)
        arm = slice(0, len(t) - 1)
        t[arm] = cur[arm] + self.action_gain * (t[arm] - cur[arm])
        if self.s("action_noise"):
            t[arm] += self.rng["action_noise"].normal(0.0, self.s("action_noise") * unit_rad, len(t) - 1)
        return self._late(t, cur.copy())

    def _late(self, a: np.ndarray, hold: np.ndarray) -> np.ndarray:
        lag = int(self.s("action_latency"))
        if lag:
            if not self._action_queue:
                self._action_queue.extend(hold.copy() for _ in range(lag))
            self._action_queue.append(a)
            a = self._action_queue.popleft()
        if self._last_action is not None and self.s("rate_jitter") and \
                self.rng["rate_jitter"].random() < self.s("rate_jitter"):
            a = self._last_action
        self._last_action = a
        return a

    def joint_state(self, q: np.ndarray, fingers: float, reach_m: float) -> tuple[np.ndarray, float]:
        """Measured joint positions (arm, radians) and finger opening (metres) as a driver reports them:
        `proprio_noise` mm at the hand becomes that over `reach_m` in radians on each joint."""
        if not self.s("proprio_noise"):
            return np.asarray(q, np.float64), float(fingers)
        sd = self.s("proprio_noise") * 1e-3
        r = self.rng["proprio_noise"]
        return np.asarray(q, np.float64) + r.normal(0.0, sd / reach_m, len(q)), float(fingers + r.normal(0.0, sd))

    def describe(self) -> dict[str, Any]:
        how = "drawn per episode from [0, severity]" if self.randomize else "fixed"
        return {k: {"severity": s, "unit": KINDS[k].unit, "how": how} for k, s in sorted(self.limits.items())}
