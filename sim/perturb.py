"""A simulated task as a real arm's sensors and actuators would present it: `vla.perturb`'s named
perturbations applied around a task env (`perturbed(env, "realistic")`).

The task keeps simulating the truth; what the policy reads and what the arm executes pass through a
`vla.perturb.Perturber`:
- object poses (tasks whose state features come from poses: pick_place, pick_place_square) are
  perturbed before the features are computed from them, with the hand position the policy is given,
  as the policy node computes them on a robot;
- the state's first 9 values (hand position, orientation, fingers: the native and robosuite layout)
  carry the proprioception noise;
- camera extrinsics move in the simulator itself (the renderer is rebuilt for the episode), so a
  shifted camera sees real parallax rather than a translated image;
- images and actions are corrupted per step.
Experts, interveners and success checks read the simulator's truth, as a person at a real arm sees
the real scene. A perturbation that cannot apply to a task or an observation mode is one error line.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from vla.perturb import Perturber, groups_of, parse_perturb, quat_mul_xyzw

PROPRIO = 9  # hand position 3, orientation 4 (wxyz in the state), fingers 2


def perturbed(env: Any, spec: str, obs_mode: str = "image", task: str = "") -> Any:
    """`env` wrapped with the perturbations of `spec` (`vla.perturb` syntax); `env` itself when the spec
    is empty or `none`."""
    kinds = parse_perturb(spec or "none")
    return PerturbedEnv(env, kinds, obs_mode, task) if kinds else env


class PerturbedEnv(gym.Wrapper):
    def __init__(self, env: Any, kinds: dict[str, float], obs_mode: str, task: str = "") -> None:
        super().__init__(env)
        self.perturber = Perturber(kinds)
        self.groups = groups_of(kinds)
        u = env.unwrapped
        name = task or getattr(u, "TASK", type(u).__name__)
        self._poses = "pose" in self.groups or ("proprio" in self.groups and obs_mode == "state"
                                                and has_poses(u))
        if "pose" in self.groups:
            if obs_mode != "state":
                raise ValueError(f"perturb: {names_of(kinds, 'pose')} perturb object poses, which only "
                                 "obs_mode=state reads (an image-mode policy has none)")
            if not has_poses(u):
                raise ValueError(f"perturb: {names_of(kinds, 'pose')} perturb object poses; task '{name}' does "
                                 "not compute its state from poses (pick_place and pick_place_square do)")
        if "camera" in self.groups or "image" in self.groups:
            cameras = tuple(getattr(u, "cameras", ()) or ())
            if not cameras:
                raise ValueError(f"perturb: {names_of(kinds, 'camera', 'image')} act on camera images; "
                                 "this run has no cameras (cameras=[])")
        self.mount = CameraMount(u, kinds, name) if "camera" in self.groups else None
        space = env.action_space  # the limits actions are clipped to, fixed for the env's life
        self._limits = (float(np.min(space.low)) if hasattr(space, "low") else -1.0,
                        float(np.max(space.high)) if hasattr(space, "high") else 1.0)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        self.perturber.reset(0 if seed is None else seed)
        if self.mount is not None:
            self.mount.move(self.perturber)
        obs, info = self.env.reset(seed=seed, options=options)
        return self._observe(obs), info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        executed = self.perturber.action(np.asarray(action, np.float64), *self._limits).astype(np.float32)
        obs, reward, terminated, truncated, info = self.env.step(executed)
        return self._observe(obs), reward, terminated, truncated, info

    def _observe(self, obs: dict[str, Any]) -> dict[str, Any]:
        p = self.perturber
        out = dict(obs)
        state = np.asarray(obs["state"], np.float64)
        proprio = p.proprio(state[:PROPRIO]) if "proprio" in self.groups else state[:PROPRIO]
        rest = state[PROPRIO:]
        if self._poses:
            u = self.env.unwrapped
            poses = u.object_poses()
            if "pose" in self.groups:
                poses = p.poses(poses)
            rest = np.asarray(u.features_from_poses(poses, proprio[:3]), np.float64)
        out["state"] = np.concatenate([proprio, rest]).astype(np.float32)
        if obs.get("images"):
            out["images"] = p.images(obs["images"])
        return out


class CameraMount:
    """The task's cameras where they were built, moved per episode by a Perturber's camera offset and
    turn (the evaluator's wrapper and the ROS bridge share it)."""

    def __init__(self, u: Any, kinds: dict[str, float], name: str) -> None:
        model = getattr(u, "model", None)
        if model is None or not hasattr(model, "cam_pos"):
            raise ValueError(f"perturb: {names_of(kinds, 'camera')} move the simulator's cameras, and "
                             f"task '{name}' exposes no MuJoCo model (the native tasks do)")
        import mujoco

        self.u = u
        self.ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, c) for c in u.cameras]
        self.pos = model.cam_pos[self.ids].copy()
        self.quat = model.cam_quat[self.ids].copy()  # wxyz

    def move(self, p: Perturber) -> None:
        m = self.u.model
        m.cam_pos[self.ids] = self.pos + p.camera_offset
        q = self.quat[:, [1, 2, 3, 0]]  # wxyz -> xyzw
        turned = quat_mul_xyzw(np.broadcast_to(p.camera_rot, q.shape), q)
        m.cam_quat[self.ids] = turned[:, [3, 0, 1, 2]]
        # the renderer checks once whether static geoms hide the sky from each camera: check again
        if getattr(self.u, "_renderer", None) is not None:
            self.u._renderer.close()
            self.u._renderer = None


def has_poses(u: Any) -> bool:
    try:
        u.features_from_poses(u.object_poses(), np.zeros(3))
    except (NotImplementedError, AttributeError):
        return False
    return True


def names_of(kinds: dict[str, float], *groups: str) -> str:
    from vla.perturb import KINDS

    return ", ".join(k for k in kinds if KINDS[k].group in groups)
