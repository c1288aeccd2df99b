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
- the surfaces' colours change in the simulator's model, so the renderer shades them as it would, and a
  distractor cube stands on the table in some episodes (seen by the cameras; it collides with nothing);
- images and actions are corrupted per step.
Experts, interveners and success checks read the simulator's truth, as a person at a real arm sees
the real scene. A perturbation named on its own that cannot apply to a task or an observation mode is one
error line; a preset (`realistic`) names what a lab setup has, so the kinds it brings that cannot apply here
(object-pose errors for a policy that reads no poses) are left out and named (`preset_applicable`).

Domain randomisation (`randomize=SPEC`, e.g. the demos' collection) is the same wrapper with every
episode's severities drawn from [0, SPEC's] (`vla.perturb.draw_severities`); there a kind that cannot
apply (object poses in image mode) is left out and named, not an error, so one preset serves both modes.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from vla.perturb import KINDS, PROPRIO, Perturber, groups_of, parse_perturb, quat_mul_xyzw, spec_text


def perturbed(env: Any, spec: str, obs_mode: str = "image", task: str = "", randomize: str = "none") -> Any:
    """`env` wrapped with the perturbations of `spec` (`vla.perturb` syntax), or with the domain
    randomisation of `randomize` (one of the two); `env` itself when both are empty or `none`."""
    kinds, rand = parse_perturb(spec or "none"), parse_perturb(randomize or "none")
    if kinds and rand:
        raise ValueError(f"perturb ({spec}) and randomize ({randomize}) are both set; an episode takes one")
    if rand:
        kept, _ = applicable_kinds(randomize, env.unwrapped, obs_mode, task)
        return PerturbedEnv(env, kept, obs_mode, task, randomize=True) if kept else env
    return PerturbedEnv(env, kinds, obs_mode, task) if kinds else env


def inapplicable(kind: str, u: Any, obs_mode: str, task: str = "") -> str:
    """Why `kind` cannot apply to this env and observation mode ("" when it can), in one line."""
    group, name = KINDS[kind].group, task or getattr(u, "TASK", type(u).__name__)
    if group == "pose":
        if obs_mode != "state":
            return f"{kind} perturbs object poses, which only obs_mode=state reads (an image-mode policy has none)"
        if not has_poses(u):
            return (f"{kind} perturbs object poses; task '{name}' does not compute its state from poses "
                    "(pick_place and pick_place_square do)")
    if group in ("camera", "image") and not tuple(getattr(u, "cameras", ()) or ()):
        return f"{kind} acts on camera images; this run has no cameras (cameras=[])"
    if group in ("camera", "scene") and not hasattr(getattr(u, "model", None), "cam_pos"):
        return f"{kind} changes the simulator's scene, and task '{name}' exposes no MuJoCo model (the native tasks do)"
    if kind == "distractor" and not (hasattr(u, "privileged") and _has_geom(u.model, "distractor")):
        return f"distractor needs the native arm's scene (its distractor cube); task '{name}' has none"
    return ""


def _has_geom(model: Any, name: str) -> bool:
    try:
        model.geom(name)
    except KeyError:
        return False
    return True


def applicable_kinds(spec: str, u: Any, obs_mode: str, task: str = "") -> tuple[dict[str, float], dict[str, str]]:
    """`spec`'s kinds that apply here, and those that do not with why (what a randomised run leaves out)."""
    kinds = parse_perturb(spec or "none")
    why = {k: inapplicable(k, u, obs_mode, task) for k in kinds}
    return {k: s for k, s in kinds.items() if not why[k]}, {k: w for k, w in why.items() if w}


def preset_applicable(spec: str, u: Any, obs_mode: str, task: str = "") -> tuple[str, dict[str, str]]:
    """`spec` without the kinds its presets bring that cannot apply here, as NAME:SEVERITY,... (`spec` itself when
    every kind applies), and those left out with why. A kind named on its own is kept (and fails where it
    cannot apply): whoever names `pose_noise` on a camera policy asked for something that does not exist."""
    kinds = parse_perturb(spec or "none")
    named = {raw.partition(":")[0].strip() for raw in str(spec or "").split(",")} & set(KINDS)
    left = {k: why for k in kinds if k not in named and (why := inapplicable(k, u, obs_mode, task))}
    if not left:
        return spec, {}
    return spec_text({k: s for k, s in kinds.items() if k not in left}), left


class PerturbedEnv(gym.Wrapper):
    def __init__(self, env: Any, kinds: dict[str, float], obs_mode: str, task: str = "",
                 randomize: bool = False) -> None:
        super().__init__(env)
        u = env.unwrapped
        for kind in kinds:
            why = inapplicable(kind, u, obs_mode, task)
            if why:
                raise ValueError(f"perturb: {why}")
        self.perturber = Perturber(kinds, randomize=randomize)
        self.groups = groups_of(kinds)
        self._poses = "pose" in self.groups or ("proprio" in self.groups and obs_mode == "state"
                                                and has_poses(u))
        self.scene = SceneEffects(u, kinds)
        space = env.action_space  # the limits actions are clipped to, fixed for the env's life
        self._limits = (float(np.min(space.low)) if hasattr(space, "low") else -1.0,
                        float(np.max(space.high)) if hasattr(space, "high") else 1.0)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        self.perturber.reset(0 if seed is None else seed)
        self.scene.before_reset(self.perturber)
        obs, info = self.env.reset(seed=seed, options=options)
        if self.scene.after_reset(self.perturber):
            obs = self.env.unwrapped._obs()  # the first frame shows this episode's distractor, not the last one's
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

    def __init__(self, u: Any) -> None:
        import mujoco

        model = u.model
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


class SceneEffects:
    """What the camera and scene kinds of `kinds` change in the simulator, per episode, for every place that
    applies them (the evaluator's wrapper, the ROS bridge, the executor benchmark): `before_reset` moves the
    cameras and recolours the surfaces, `after_reset` (once the task placed its objects) stands the distractor
    on the table or takes the last one away, and says whether the observation must be taken again."""

    def __init__(self, u: Any, kinds: dict[str, float]) -> None:
        self.mount = CameraMount(u) if "camera" in groups_of(kinds) else None
        self.colours = SceneColours(u) if "surface_colour" in kinds else None
        self.distractor = Distractor(u) if "distractor" in kinds else None

    def before_reset(self, p: Perturber) -> None:
        if self.mount is not None:
            self.mount.move(p)
        if self.colours is not None:
            self.colours.paint(p)

    def after_reset(self, p: Perturber) -> bool:
        return self.distractor is not None and self.distractor.place(p)


class SceneColours:
    """The scene's surface colours as built, recoloured per episode by a Perturber's surface gains (the
    renderer reads the model's colours every frame, so nothing is rebuilt). Invisible geoms stay so."""

    def __init__(self, u: Any) -> None:
        self.u = u
        self.rgba = u.model.geom_rgba.copy()

    def paint(self, p: Perturber) -> None:
        gains = p.surface_gains(len(self.rgba))
        self.u.model.geom_rgba[:, :3] = np.clip(self.rgba[:, :3] * gains, 0.0, 1.0)


class Distractor:
    """The native scene's distractor cube: stood on the table for an episode that draws one (`place`, after the
    task placed its own objects), at the first of the Perturber's candidate spots 8 cm from every task object,
    otherwise invisible under the floor."""

    CLEARANCE = 0.08

    def __init__(self, u: Any) -> None:
        self.u = u
        self.id = u.model.geom("distractor").id
        self.half = float(u.model.geom_size[self.id, 2])
        self.away = u.model.geom_pos[self.id].copy()

    def place(self, p: Perturber) -> bool:
        """Whether the scene the cameras see changed: a distractor stands on the table this episode, or the one of
        the episode before was taken away (the task's reset rendered the first frame with it still there, and an
        episode's first frame must not depend on the episodes before it)."""
        import mujoco

        m, d = self.u.model, self.u.data
        stood = bool(m.geom_rgba[self.id, 3] > 0)  # the last episode's, still in the model (built invisible)
        objects = self._objects() if p.distractor else []
        spots = [xy for xy in p.distractor_xy if p.distractor and all(
            np.linalg.norm(xy - np.asarray(o)[:2]) >= self.CLEARANCE for o in objects)]
        if spots:
            m.geom_pos[self.id] = [*spots[0], self.half]
            m.geom_rgba[self.id] = [*p.distractor_rgb, 1.0]
        else:
            m.geom_pos[self.id] = self.away
            m.geom_rgba[self.id, 3] = 0.0
        mujoco.mj_forward(m, d)
        return bool(spots) or stood

    def _objects(self) -> list[np.ndarray]:
        priv = self.u.privileged()
        out = [o["pos"] for o in priv.get("objects", {}).values()]
        return out + [priv[k] for k in ("goal_pos", "zone_pos") if k in priv]


def has_poses(u: Any) -> bool:
    try:
        u.features_from_poses(u.object_poses(), np.zeros(3))
    except (NotImplementedError, AttributeError):
        return False
    return True


