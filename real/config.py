"""Deployment configuration (`configs/deploy/*.yaml`): executor, joint limits, cameras, topics, policy.

Plain YAML read with `yaml.safe_load` (never pickle); unknown keys are errors so a typo in a
safety-relevant setting cannot silently fall back to a default.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from real.executor import ExecutorConfig
from real.recorder import RecorderConfig
from real.safety import JointLimits
from vla.interfaces import Policy

COMMAND_INTERFACES = ("forward", "trajectory")


@dataclass(frozen=True)
class CameraConfig:
    name: str
    topic: str
    height: int
    width: int

    def __post_init__(self) -> None:
        if self.height <= 0 or self.width <= 0:
            raise ValueError(f"camera {self.name!r}: height and width must be positive")


@dataclass(frozen=True)
class ObjectsConfig:
    """Object poses from a pose estimator (geometry_msgs/PoseArray), for a policy whose state holds
    them (trained with `obs_mode=state`): exactly `count` poses per message, in `frame_id`, in the order
    of the task's OBJECT_POSES (the policy's `objects_task`)."""

    topic: str = "/perception/object_poses"
    count: int = 2
    frame_id: str = "world"
    # |quaternion| may be off 1 by this much (float rounding in the sender); more is a broken message
    quat_norm_tolerance: float = 1e-3

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"objects.count must be >= 1, got {self.count}")
        if not 0 < self.quat_norm_tolerance < 1:
            raise ValueError(f"objects.quat_norm_tolerance must be in (0, 1), got {self.quat_norm_tolerance}")


@dataclass
class DeployConfig:
    executor: ExecutorConfig
    limits: JointLimits
    policy: dict[str, Any]
    cameras: list[CameraConfig] = field(default_factory=list)
    joint_states_topic: str = "/joint_states"
    instruction_topic: str = "/instruction"
    command_topic: str = "/forward_position_controller/commands"
    diagnostics_topic: str = "/diagnostics"
    command_interface: str = "forward"  # forward -> Float64MultiArray, trajectory -> JointTrajectory
    default_instruction: str = ""
    # Hold (no inference; the arm keeps its position) until the robot's first instruction arrives on
    # `instruction_topic`, for at most this long after the node starts; then `default_instruction`
    # (a warning says so). A robot that publishes its instruction now and then on a volatile topic
    # would otherwise have the first chunk inferred for the default, which for a multi-goal task is
    # another goal. 0: start at once with the default (a robot that publishes no instruction).
    instruction_wait_s: float = 0.0
    max_instruction_chars: int = 1000
    diagnostics_hz: float = 1.0
    ros_domain_id: int | None = None
    # Joint states and images whose header stamp is further than this from the node's ROS clock (wall
    # time, or /clock under use_sim_time) are rejected: a replayed or stalled message is not fresh.
    # None turns the check off (a driver whose clock is not synchronised with this machine's).
    stamp_tolerance_s: float | None = 0.5
    # Whether `~/emergency_stop` with data=false may clear a latched stop. Anyone on the ROS domain can
    # call the service (see the README's SROS2 section), so it is off unless access control is in place.
    allow_estop_clear: bool = False
    # Record every deployed episode to an EpisodeStore (real/recorder.py); off without a store path.
    recorder: RecorderConfig = field(default_factory=RecorderConfig)
    # Object poses (a pose estimator's topic); None: the policy reads joints and cameras only. Stale
    # poses hold the arm as stale joint states do.
    objects: ObjectsConfig | None = None
    # Joint states a real arm cannot be in hold it (hold kind implausible_joint_state, named in the
    # diagnostics) until sane ones return: a position past its joint's range by more than this (in the
    # joints' units: rad, m for a prismatic gripper; an arm held inside the range by the safety layer
    # only leaves it by tracking error and encoder noise), or a speed above this many times its
    # max_velocity (no servo runs a joint that fast: a broken encoder or driver, not motion).
    joint_state_position_tolerance: float = 0.05
    joint_state_velocity_factor: float = 3.0

    def __post_init__(self) -> None:
        if self.command_interface not in COMMAND_INTERFACES:
            raise ValueError(f"command_interface must be one of {COMMAND_INTERFACES}, got {self.command_interface!r}")
        if self.ros_domain_id is not None and not 0 <= self.ros_domain_id <= 232:
            raise ValueError(f"ros_domain_id must be in [0, 232], got {self.ros_domain_id}")
        if self.stamp_tolerance_s is not None and not self.stamp_tolerance_s > 0:
            raise ValueError(f"stamp_tolerance_s must be > 0 or null, got {self.stamp_tolerance_s}")
        if not self.instruction_wait_s >= 0:  # also NaN
            raise ValueError(f"instruction_wait_s must be >= 0, got {self.instruction_wait_s}")
        if not (math.isfinite(self.joint_state_position_tolerance) and self.joint_state_position_tolerance >= 0):
            raise ValueError(f"joint_state_position_tolerance must be finite and >= 0, "
                             f"got {self.joint_state_position_tolerance}")
        if not (math.isfinite(self.joint_state_velocity_factor) and self.joint_state_velocity_factor >= 1):
            raise ValueError(f"joint_state_velocity_factor must be finite and >= 1 (a multiple of max_velocity), "
                             f"got {self.joint_state_velocity_factor}")
        if not isinstance(self.allow_estop_clear, bool):
            raise ValueError(f"allow_estop_clear must be true or false, got {self.allow_estop_clear!r}")
        names = [c.name for c in self.cameras]
        if len(set(names)) != len(names):
            raise ValueError(f"camera names must be unique, got {names}")


def _strict(cls: type, data: dict[str, Any], where: str) -> dict[str, Any]:
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown} (known: {sorted(known)})")
    return data


def deploy_config_from_dict(raw: dict[str, Any]) -> DeployConfig:
    if not isinstance(raw, dict):
        raise ValueError(f"deploy config must be a mapping, got {type(raw).__name__}")
    raw = dict(_strict(DeployConfig, raw, "deploy config"))
    for key in ("executor", "limits", "policy"):
        if key not in raw:
            raise ValueError(f"deploy config lacks the {key!r} section")
    executor = ExecutorConfig(**_strict(ExecutorConfig, raw.pop("executor") or {}, "executor"))
    limits_raw = raw.pop("limits")
    if "urdf" in limits_raw:
        limits = JointLimits.from_urdf(limits_raw["urdf"], list(limits_raw["names"]), limits_raw["max_acceleration"])
    else:
        limits = JointLimits.from_config(limits_raw)
    cameras = [CameraConfig(**_strict(CameraConfig, c, "camera")) for c in raw.pop("cameras", None) or []]
    recorder = RecorderConfig(**_strict(RecorderConfig, raw.pop("recorder", None) or {}, "recorder"))
    objects_raw = raw.pop("objects", None)
    objects = None if objects_raw is None else ObjectsConfig(**_strict(ObjectsConfig, objects_raw, "objects"))
    return DeployConfig(executor=executor, limits=limits, cameras=cameras, recorder=recorder, objects=objects, **raw)


def load_deploy_config(path: str | Path) -> DeployConfig:
    with open(path) as f:
        return deploy_config_from_dict(yaml.safe_load(f))


def make_policy(spec: dict[str, Any], dt: float, action_dim: int) -> Policy:
    """Build the policy named by `spec`.

    `{kind: synthetic, ...}` -> the stand-in `real.testing.SyntheticPolicy` (tests, dry runs);
    `{factory: "package.module:function", ...}` -> `function(**rest, dt=dt, action_dim=action_dim)`,
    which is how the exported VLA (ONNX / safetensors loader) plugs in without touching this file.
    """
    spec = dict(spec)
    if spec.pop("kind", None) == "synthetic":
        from real.testing import SyntheticPolicy

        return SyntheticPolicy(action_dim=action_dim, dt=dt, **spec)
    factory = spec.pop("factory", None)
    if not factory or ":" not in factory:
        raise ValueError(f"policy spec needs kind: synthetic or factory: 'module:function', got {spec}")
    module, func = factory.split(":", 1)
    policy = getattr(importlib.import_module(module), func)(dt=dt, action_dim=action_dim, **spec)
    if not isinstance(policy, Policy):
        raise TypeError(f"{factory} returned {type(policy).__name__}, which is not a vla.interfaces.Policy")
    return policy
