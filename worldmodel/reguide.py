"""ReGuide's Phase-Conditioned Guidance (PCG; arXiv 2606.28939, code tzuhsiangl/reguide) through
the policy's guidance hook, on the latent dynamics of `worldmodel/` (one model, not two).

- `fit_phase_targets`: the demos' frames are encoded by the world model; k-means over
  [latent, normalised proprio/state, action] gives clusters, ordered by median demo time and merged
  into phases (`reguide_math`); each phase keeps up to `prototypes` latents of half of the demos;
  the other half's predicted next latents (their own action chunk through the dynamics) give the
  per-phase distance percentiles: `lower` and `upper` bound the guidance band, `switch` the phase
  switch. Saved as `phases.safetensors` + `phases.json` (which names the world model).
- `PhaseGuidance`: the hook. For the K Euler steps of one chunk it predicts the next latent from
  the current observation's latent and the clean-action estimate's first chunk (ensemble mean),
  measures its softmin distance to the current phase's prototypes and, in the late steps and only
  where lower < d <= upper, returns -scale * grad_a d (a change of the clean estimate; the
  sampler turns it into a velocity with its pseudo-inverse weight, see vla/policy/flow.py). After
  the chunk is sampled the phase state machine advances.
- `GuidedPolicy` (spec `reguide:ckpt=POLICY,phases=DIR[,scale=0.01,late=0.3,dims=0:3]`; dims: the action
  dims guidance may change, all by default): a Policy whose
  `last_guided` says, per row, whether guidance acted on the last chunk; the evaluator records
  it per step (`EpisodeResult.guided_steps`).

`PhaseConfig.space=state` (ours) measures every distance on task-frame features of the predicted
state (the world model's state head; e.g. gripper-to-cube offsets) instead of the latent, with
prototypes from the demos' true states: see `reguide_math`.

Where ours differs from the paper: the latent is the world model's own SimNorm latent (trained
with its dynamics) rather than the policy's frozen encoder; the dynamics steps one 8-action chunk;
the guidance changes a flow policy's clean estimate instead of a DDPM x0 (the same quantity).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vla.policy.specs import spec_args, spec_loader
from vla.registry import POLICY_SPECS
from worldmodel import reguide_math as rm
from worldmodel.model import WorldModel

PERCENTILES = ("lower", "upper", "switch")
SPACES = ("latent", "state")


@dataclass
class PhaseConfig:
    clusters: int = 12  # k-means clusters over the demos' frames
    phases: int = 3  # macro phases (contiguous groups of clusters in time order)
    # latents kept per phase: dense matters (with 100-400 the demos' own held-out frames were as far
    # from them as failed rollouts; with every frame of half the demos, AUROC 0.999 between the two)
    prototypes: int = 2000
    lower_pct: float = 30.0  # guidance band: the demos' own distance percentiles (released code: 30 / 90)
    upper_pct: float = 90.0
    switch_pct: float = 80.0  # phase switch threshold (released code: 80)
    tau_pct: float = 10.0  # softmin temperature: this percentile of the nearest-prototype distances
    proprio_weight: float = 1.0  # weights of the feature blocks in the clustering
    action_weight: float = 1.0
    switch_margin: float = 0.2  # in units of the softmin temperature tau
    switch_min_steps: int = 1  # released code: 2; our pick_place episodes are ~5 chunks long
    # where distances are measured: "latent" (the paper's) or "state": task-frame features of the
    # world model's predicted state (reguide_math.state_feature_matrix; "" = every state dim)
    space: str = "latent"
    state_features: str = ""
    seed: int = 0

    def validate(self) -> None:
        if self.phases < 1 or self.clusters < self.phases:
            raise ValueError(f"phases must be >= 1 and clusters >= phases, got {self.phases}, {self.clusters}")
        if not 0 <= self.lower_pct < self.upper_pct <= 100:
            raise ValueError(f"need 0 <= lower_pct < upper_pct <= 100, got {self.lower_pct}, {self.upper_pct}")
        if self.prototypes < 1 or self.switch_min_steps < 1:
            raise ValueError("prototypes and switch_min_steps must be >= 1")
        if self.space not in SPACES:
            raise ValueError(f"space must be one of {', '.join(SPACES)}, got {self.space!r}")
        if self.state_features and self.space != "state":
            raise ValueError("state_features is for space=state")


@dataclass
class PhaseTargets:
    protos: torch.Tensor  # [n_phases, P, L] latents
    mask: torch.Tensor  # [n_phases, P] False = padding
    thresholds: np.ndarray  # [n_phases, 3]: lower, upper, switch
    tau: float
    wm: str  # the world model the latents belong to
    info: dict[str, Any]
    # space=state: the feature map [F, D] and the demo frames' feature mean / std [F]; None = latent
    feature: dict[str, torch.Tensor] | None = None

    @property
    def n_phases(self) -> int:
        return int(self.protos.shape[0])

    def column(self, name: str) -> np.ndarray:
        return self.thresholds[:, PERCENTILES.index(name)]

    def save(self, folder: str | Path) -> Path:
        from safetensors.torch import save_file

        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        tensors = {"protos": self.protos.contiguous(), "mask": self.mask.contiguous()}
        tensors |= {f"feature_{k}": v.contiguous() for k, v in (self.feature or {}).items()}
        save_file(tensors, str(out / "phases.safetensors"))
        (out / "phases.json").write_text(json.dumps({"thresholds": self.thresholds.tolist(), "tau": self.tau,
                                                     "wm": self.wm, "info": self.info}, indent=1))
        return out

    @classmethod
    def load(cls, folder: str | Path) -> PhaseTargets:
        from safetensors.torch import load_file

        p = Path(folder)
        if not (p / "phases.json").is_file() or not (p / "phases.safetensors").is_file():
            raise FileNotFoundError(f"{p}: no ReGuide phase targets (phases.json + phases.safetensors); "
                                    "make them with `vla refine reguide-ft` or worldmodel.reguide.fit_phase_targets")
        meta = json.loads((p / "phases.json").read_text())
        t = load_file(str(p / "phases.safetensors"))
        thresholds = np.asarray(meta["thresholds"], np.float64)
        if t["protos"].dim() != 3 or thresholds.shape != (t["protos"].shape[0], len(PERCENTILES)):
            raise ValueError(f"{p}: prototypes {tuple(t['protos'].shape)} and thresholds {thresholds.shape} do not fit")
        feature = {k[len("feature_"):]: v.float() for k, v in t.items() if k.startswith("feature_")} or None
        if feature is not None and set(feature) != {"map", "mean", "std"}:
            raise ValueError(f"{p}: the state-feature tensors are incomplete: {sorted(feature)}")
        return cls(t["protos"].float(), t["mask"].bool(), thresholds, float(meta["tau"]), str(meta["wm"]),
                   meta.get("info", {}), feature)

    def embed(self, model: WorldModel, z: torch.Tensor, anchor: torch.Tensor | None = None) -> torch.Tensor:
        return embed(model, self.feature, z, anchor)


def embed(model: WorldModel, feature: dict[str, torch.Tensor] | None, z: torch.Tensor,
          anchor: torch.Tensor | None = None) -> torch.Tensor:
    """Latents [..., L] -> the points distances are measured on: the latent itself, or the
    standardised task-frame features of the model's predicted state (space=state), plus `anchor`
    (`state_anchor`: the predicted next state as the true current state plus the predicted change)."""
    if feature is None:
        return z
    return standardise(model.state(z) + (0 if anchor is None else anchor), feature)


def state_anchor(model: WorldModel, state: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """true state - the state head's reading of its latent: added to the head's prediction of the
    next state, it predicts the change rather than the absolute state. On pick_place the head's
    absolute error (3-6 cm on the arm and cube) exceeds a chunk's motion; the change form halves the
    one-chunk error of the gripper's position (R^2 0.12 -> 0.63) and does not alter the gradient."""
    return state - model.state(z)


def standardise(state: torch.Tensor, feature: dict[str, torch.Tensor]) -> torch.Tensor:
    return (state @ feature["map"].T - feature["mean"]) / feature["std"]


def _chunks(action: np.ndarray, starts: np.ndarray, c: int) -> np.ndarray:
    """[len(starts), c, A]: the c actions from each start (the episode's last action repeated past its end
    is not needed: callers pass only starts with t + c <= T)."""
    return np.stack([action[s:s + c] for s in starts])


@torch.no_grad()
def fit_phase_targets(store: str | Path, wm_path: str | Path, cfg: PhaseConfig, task: str = "") -> PhaseTargets:
    """Phase targets from the store's successful demonstrations (see the module docstring)."""
    from vla.data.store import EpisodeStore
    from worldmodel.checkpoint import load_checkpoint, resolve
    from worldmodel.data import load_episodes

    cfg.validate()
    model, _, _, _, _ = load_checkpoint(wm_path)
    with EpisodeStore.open(store) as s:
        table = s.table()
    demos = np.flatnonzero((table.source == "demo") & np.asarray(table.success, bool))
    if len(demos) < 2:
        raise ValueError(f"{store}: ReGuide needs >= 2 successful demos to fit phases, found {len(demos)}")
    data = load_episodes([store], model.cfg, task=task, episodes=[demos])
    state = torch.from_numpy(data.state)
    images = torch.from_numpy(data.images) if data.images is not None else None
    z = model.encode(state, images).numpy()
    feature = None
    if cfg.space == "state":
        fmap = torch.from_numpy(rm.state_feature_matrix(cfg.state_features, state.shape[1])).float()
        raw = state @ fmap.T
        # a feature constant over the demos (a fixed table height) must not divide by ~0
        feature = {"map": fmap, "mean": raw.mean(0), "std": raw.std(0).clamp_min(1e-3)}
    t_norm = np.concatenate([np.arange(n) / max(n - 1, 1) for n in data.lengths])
    episode = np.repeat(np.arange(len(data)), data.lengths)
    feats = np.concatenate([z / (z.std(0).mean() + 1e-8),
                            cfg.proprio_weight * model.norm_state(state).numpy() / np.sqrt(data.state.shape[1]),
                            cfg.action_weight * data.action / np.sqrt(data.action.shape[1])], axis=1)
    _, labels = rm.kmeans(feats, cfg.clusters, seed=cfg.seed)
    phase = rm.phases_from_clusters(labels, t_norm, cfg.phases)

    # prototypes from half of the demos, thresholds from the other half (a frame's distance to its
    # own latent would be 0)
    rng = np.random.default_rng(cfg.seed)
    order = rng.permutation(len(data))
    proto_eps, thr_eps = order[: (len(data) + 1) // 2], order[(len(data) + 1) // 2:]
    # the points prototypes and distances live on: latents, or (space=state) the demos' true
    # task-frame features; the thresholds below come from the model's predicted ones
    points = z if feature is None else standardise(state, feature).numpy()
    protos = torch.zeros(cfg.phases, cfg.prototypes, points.shape[1])
    mask = torch.zeros(cfg.phases, cfg.prototypes, dtype=torch.bool)
    for j in range(cfg.phases):
        idx = np.flatnonzero((phase == j) & np.isin(episode, proto_eps))
        if len(idx) > cfg.prototypes:
            idx = np.sort(rng.choice(idx, cfg.prototypes, replace=False))
        protos[j, : len(idx)] = torch.from_numpy(points[idx]).float()
        mask[j, : len(idx)] = True
    c = model.cfg.chunk
    ends = data.starts + data.lengths
    frames = np.concatenate([np.arange(s, e - c + 1) for s, e in zip(data.starts[thr_eps], ends[thr_eps], strict=True)])
    zf = torch.from_numpy(z[frames])
    anchor = None if feature is None else state_anchor(model, state[frames], zf)
    z_next = embed(model, feature, model.next(zf, torch.from_numpy(_chunks(data.action, frames, c))).mean(0), anchor)
    nearest = torch.stack([torch.linalg.vector_norm(z_next[:, None] - protos[j][mask[j]][None], dim=-1).min(1).values
                           for j in range(cfg.phases)], 1)
    tau = float(np.percentile(nearest.min(1).values.numpy(), cfg.tau_pct))
    dist = np.stack([rm.softmin_distance(z_next, protos[j][mask[j]], tau).numpy() for j in range(cfg.phases)], 1)
    own = dist[np.arange(len(frames)), phase[frames]]
    thresholds = rm.phase_thresholds(own, phase[frames], cfg.phases, [cfg.lower_pct, cfg.upper_pct, cfg.switch_pct])
    info = {"config": asdict(cfg), "demos": len(data), "frames": len(z),
            "phase_frames": np.bincount(phase, minlength=cfg.phases).tolist(),
            "phase_median_time": [float(np.median(t_norm[phase == j])) for j in range(cfg.phases)],
            "threshold_frames": len(frames)}
    return PhaseTargets(protos, mask, thresholds, tau, str(resolve(wm_path)), info, feature)


def observation_inputs(model: WorldModel, obs_batch: Sequence[dict[str, Any]]
                       ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """`worldmodel.data.observation_arrays` as tensors for `model.encode`."""
    from worldmodel.data import observation_arrays

    state, images = observation_arrays(model.cfg, obs_batch)
    return torch.from_numpy(state), None if images is None else torch.from_numpy(images)


class PhaseGuidance:
    """The guidance hook for one chunk at a time; keeps each row's phase across chunks."""

    def __init__(self, model: WorldModel, targets: PhaseTargets, scale: float = 0.01, late: float = 0.3,
                 num_steps: int = 10, cfg: PhaseConfig | None = None, dims: slice | None = None) -> None:
        if scale < 0 or not 0 <= late <= 1:
            raise ValueError(f"scale must be >= 0 and late in [0, 1], got {scale}, {late}")
        self.model, self.targets, self.scale, self.late, self.num_steps = model, targets, scale, late, num_steps
        self.dims = dims or slice(None)  # the action dims guidance may change (e.g. 0:3, the arm's position)
        pc = cfg or PhaseConfig(**{k: v for k, v in targets.info.get("config", {}).items()
                                   if k in PhaseConfig.__dataclass_fields__})
        self.margin, self.min_steps = pc.switch_margin, pc.switch_min_steps
        self.phase = np.zeros(0, np.int64)
        self.counter = np.zeros(0, np.int64)
        self.z: torch.Tensor | None = None
        self.anchor: torch.Tensor | None = None
        self.guided = np.zeros(0, bool)
        self.last_distance = np.zeros(0)

    def reset(self, batch: int = 1) -> None:
        self.phase, self.counter = np.zeros(batch, np.int64), np.zeros(batch, np.int64)

    def begin(self, obs_batch: Sequence[dict[str, Any]]) -> None:
        if len(self.phase) != len(obs_batch):
            self.reset(len(obs_batch))
        self.set_state(*observation_inputs(self.model, obs_batch))
        self.guided = np.zeros(len(obs_batch), bool)

    @torch.no_grad()
    def set_state(self, state: torch.Tensor, images: torch.Tensor | None = None) -> None:
        """The current observation's latent (and, space=state, its `state_anchor`)."""
        self.z = self.model.encode(state, images)
        self.anchor = None if self.targets.feature is None else state_anchor(self.model, state, self.z)

    def next_latent(self, actions: torch.Tensor) -> torch.Tensor:
        """The ensemble's mean next latent [B, L] after the actions' first chunk, embedded where the
        distances are measured (`PhaseTargets.embed`)."""
        assert self.z is not None, "begin() first"
        z_next = self.model.next(self.z, actions[:, :self.model.cfg.chunk]).mean(0)
        return self.targets.embed(self.model, z_next, self.anchor)

    def phase_distance(self, z_next: torch.Tensor, phase: np.ndarray) -> torch.Tensor:
        """Softmin distance [B] of next latents to each row's `phase` prototypes."""
        ph = torch.from_numpy(np.clip(phase, 0, self.targets.n_phases - 1))
        return rm.softmin_distance(z_next, self.targets.protos[ph], self.targets.tau, self.targets.mask[ph])

    def distance(self, actions: torch.Tensor, phase: np.ndarray) -> torch.Tensor:
        """Softmin distance [B] of the predicted next latent to each row's `phase` prototypes."""
        return self.phase_distance(self.next_latent(actions), phase)

    def __call__(self, x1: np.ndarray, t: float) -> np.ndarray:
        delta = np.zeros_like(x1, dtype=np.float32)
        if not rm.late_step(t, self.num_steps, self.late) or self.scale == 0:
            return delta
        a = torch.from_numpy(np.asarray(x1, np.float32)).requires_grad_(True)
        with torch.enable_grad():
            d = self.distance(a, self.phase)
            gate = rm.guidance_gate(d.detach().numpy(), self.targets.column("lower")[self.phase],
                                    self.targets.column("upper")[self.phase])
            if not gate.any():
                return delta
            (grad,) = torch.autograd.grad((d * torch.from_numpy(gate).float()).sum(), a)
        self.guided |= gate
        delta[..., self.dims] = (-self.scale * grad).numpy()[..., self.dims]
        return delta

    @torch.no_grad()
    def end(self, chunk: np.ndarray) -> None:
        """The sampled chunk is final: measure it against the current and next phase and advance."""
        a = torch.from_numpy(np.asarray(chunk, np.float32))
        n = self.targets.n_phases
        nxt = np.minimum(self.phase + 1, n - 1)
        z_next = self.next_latent(a)  # once: both phases are measured from the same prediction
        d_cur, d_next = self.phase_distance(z_next, self.phase).numpy(), self.phase_distance(z_next, nxt).numpy()
        self.last_distance = d_cur
        switch = self.targets.column("switch")
        self.phase, self.counter = rm.phase_step(self.phase, self.counter, d_cur, d_next, switch[nxt],
                                                 self.margin * self.targets.tau, self.min_steps, n)


@torch.no_grad()
def replay_phases(guidance: PhaseGuidance, store: str | Path, episodes: np.ndarray, second_half: bool = False
                  ) -> dict[str, np.ndarray]:
    """Logged episodes through the phase state machine, one chunk of their own actions at a time:
    the gate's distance per chunk (to the tracked phase; only the episode's second half with
    `second_half`) and the phase each episode ends in. A check of the targets without a policy."""
    from worldmodel.data import load_episodes

    model, c = guidance.model, guidance.model.cfg.chunk
    data = load_episodes([store], model.cfg, episodes=[np.asarray(episodes)])
    dist, final = [], []
    for e in range(len(data)):
        s, n = int(data.starts[e]), int(data.lengths[e])
        guidance.reset(1)
        for t in range(0, n - c + 1, c):
            guidance.set_state(torch.from_numpy(data.state[s + t][None]),
                               None if data.images is None else torch.from_numpy(data.images[s + t][None]))
            guidance.end(data.action[s + t:s + t + c][None])
            if not second_half or t >= n / 2:
                dist.append(float(guidance.last_distance[0]))
        final.append(int(guidance.phase[0]))
    return {"distance": np.asarray(dist), "final_phase": np.asarray(final, np.int64)}


class GuidedPolicy:
    """A Policy that samples every chunk of `policy` under phase-conditioned guidance."""

    def __init__(self, policy: Any, guidance: PhaseGuidance) -> None:
        self.policy, self.guidance = policy, guidance
        self.cfg = getattr(policy, "cfg", None)
        self.last_guided = np.zeros(0, bool)
        self.phases: list[int] = []  # row 0's phase after each chunk (for logs and tests)

    def reset(self, seed: int | None = None) -> None:
        self.policy.reset(seed)
        self.guidance.reset(1)
        self.phases = []

    def sample_chunk(self, obs_batch: Sequence[Any], prefix: np.ndarray | None = None, guidance: Any = None
                     ) -> np.ndarray:
        if guidance is not None:
            raise ValueError("reguide: the policy is already guided (phase-conditioned guidance); no second hook")
        self.guidance.begin(obs_batch)
        chunk = np.asarray(self.policy.sample_chunk(obs_batch, prefix=prefix, guidance=self.guidance), np.float32)
        self.last_guided = self.guidance.guided.copy()
        self.guidance.end(chunk)
        self.phases.append(int(self.guidance.phase[0]))
        return chunk


SPEC_KEYS = ("ckpt", "phases", "scale", "late", "dims")


def parse_spec(args: str) -> dict[str, str]:
    return spec_args("reguide", args, SPEC_KEYS, ("ckpt", "phases"), "reguide:ckpt=P,phases=DIR,scale=0.01")


def guided_spec(ckpt: str | Path, phases: str | Path, scale: float, late: float, dims: str = "") -> str:
    """The `reguide:` policy spec of a checkpoint guided by the phase targets in `phases`."""
    return f"reguide:ckpt={ckpt},phases={phases},scale={scale},late={late}" + (f",dims={dims}" if dims else "")


def parse_dims(text: str) -> slice | None:
    """`a:b` -> slice(a, b); "" -> None (every action dim)."""
    if not text:
        return None
    try:
        a, b = (int(x) for x in text.split(":"))
    except ValueError:
        raise ValueError(f"reguide: dims must be a slice a:b of the action dims, got {text!r}") from None
    if not 0 <= a < b:
        raise ValueError(f"reguide: dims {text!r} selects no action dims")
    return slice(a, b)


def make_guided(policy: Any, phases: str | Path, scale: float = 0.01, late: float = 0.3, dims: str = ""
                ) -> GuidedPolicy:
    from worldmodel.checkpoint import load_checkpoint

    targets = PhaseTargets.load(phases)
    model = load_checkpoint(targets.wm)[0]
    num_steps = int(getattr(getattr(policy, "cfg", None), "num_steps", 10))
    return GuidedPolicy(policy, PhaseGuidance(model, targets, scale=scale, late=late, num_steps=num_steps,
                                              dims=parse_dims(dims)))


@POLICY_SPECS.register("reguide")
def make_reguide(args: str, env: Any = None, seed: int = 0, load: Callable[[str], Any] | None = None
                 ) -> GuidedPolicy:
    a = parse_spec(args)
    load = spec_loader(load, seed)
    return make_guided(load(a["ckpt"]), a["phases"], scale=float(a.get("scale", 0.01)),
                       late=float(a.get("late", 0.3)), dims=a.get("dims", ""))
