"""Typed configuration of a refinement run (`vla refine`), loaded from `configs/refine/*.yaml`
presets with `key=value` overrides through the project's one loader (`vla.config.load_config`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from vla import protocol
from vla.data.schema import closest
from vla.refine.critics import CriticConfig
from vla.refine.weights import METHODS
from vla.train.config import TrainConfig

FEATURES = ("state", "encoder")


@dataclass
class HabcConfig(CriticConfig):
    features: str = "state"  # critic input: state vector, or the frozen policy encoder's mean token + state
    current_version_only: bool = True  # outcome labels only on the current policy's own segments (the paper)
    # draw the policy's windows in proportion to their critic weight (loss weight 1) instead of
    # uniformly with the weight on the loss: the group's share is then spent on the steps it endorses
    sample_by_weight: bool = False
    # GAE(lambda) advantages over each run of policy steps instead of the one-step form (null);
    # see habc_math.lambda_advantages
    adv_lambda: float | None = None
    # supervise only the policy's runs that ended in a success, ranked inside them by exp(A / beta)
    # normalised to mean 1 (replaces the V(s') scaling); see habc_math.gated_weights
    outcome_gate: bool = False


@dataclass
class AwrConfig(CriticConfig):
    beta: float = 0.25  # temperature on G - V, with G in [0, 1]
    features: str = "state"


@dataclass
class RefineConfig:
    method: str = "habc"  # habc | rac | hg_dagger | dagger | sft | filtered_bc | awr
    task: str = "pick_place"
    ckpt: str = ""  # the pretrained checkpoint folder (policy version 0)
    demos: str = ""  # EpisodeStore of demonstrations, copied into the run's own store
    out_dir: str = "runs/refine"
    iterations: int = 4  # collect -> train rounds; iteration k evaluates policy version k
    episodes_per_iteration: int = 20  # rollouts collected with the intervener per iteration
    eval_episodes: int = 50
    # the same seed list evaluates every version: eval_episodes seeds from eval_seed_offset of a named
    # range (vla.protocol): tune while a setting is being chosen, report for a figure
    eval_seed_range: str = "tune"
    eval_seed_offset: int = 0
    # iteration k collects the collect range's seeds offset + k * episodes_per_iteration + i
    collect_seed_offset: int = 200_000
    workers: int = 2
    backend: str = "local"  # evaluation and collection workers: local processes | ray (sim/ray_backend.py)
    ray_address: str = ""  # backend=ray: HOST:PORT of the cluster's head; "" = a private one-machine cluster
    n_action_steps: int = 8
    temporal_ensemble: float | None = None  # sim.evaluate.EvalConfig.temporal_ensemble, in rollouts and evaluations
    # the rollouts' own rate when it differs from the evaluations' (None: temporal_ensemble's): with
    # filtered_bc and intervener='' the policy imitates its own ensembled successes, which it is then
    # evaluated without (benchmarks/refine_budget.py `fbc100_te`)
    collect_temporal_ensemble: float | None = None
    temporal_ensemble_every: int = 1  # sim.evaluate.EvalConfig.temporal_ensemble_every, rollouts and evaluations
    obs_mode: str = "image"  # image | state (state: object poses in the state vector, no cameras)
    cameras: list[str] | None = None  # None: the task's default cameras; []: none
    image_size: int = 84
    horizon: int | None = None
    intervener_args: dict[str, float] = field(default_factory=dict)  # when the simulated person steps in
    demo_share: float | None = None  # share of sampled windows from demos; None: rac 0.5, others proportional
    # a fixed share of samples per group (demo, correction, policy), so that methods compare at equal
    # shares; replaces demo_share when set (built-in methods)
    group_shares: dict[str, float] = field(default_factory=dict)
    # the collection intervener instead of the method's own (rac | hg_dagger | "" none: HABC's
    # autonomous setting, rollouts with only their sparse outcome)
    intervener: str | None = None
    # a window of the policy's own steps supervises only the chunk the policy executed, not the seam
    # into the next one (vla.refine.weights.executed_chunk_ends)
    own_chunk_only: bool = False
    # the fine-tune keeps the camera encoders (backbone, token projection) as pretrained and trains the
    # rest: a few hundred correction frames then move the policy over features the demos fixed, as a
    # state policy's corrections move it over coordinates it already reads (main_job_notes.md, stop 55)
    freeze_vision: bool = False
    seed: int = 0
    videos: int = 1  # MP4s per evaluation
    train: TrainConfig = field(default_factory=TrainConfig)
    habc: HabcConfig = field(default_factory=HabcConfig)
    awr: AwrConfig = field(default_factory=AwrConfig)
    # settings of a plug-in method (vla/refine/plugin.py), e.g. imagination: {samples: 8, wm_steps: 2000}
    method_args: dict[str, Any] = field(default_factory=dict)

    RENAMED: ClassVar[dict[str, str]] = {
        "eval_seed_start": "evaluation seeds come from a named range: eval_seed_range=tune|report and "
                           "eval_seed_offset=N (vla.protocol)",
        "collect_seed_start": "collection seeds are offsets in the protocol's collect range: collect_seed_offset=N "
                              "(the collect range starts at 0, so the old value works unchanged)"}

    def eval_seeds(self) -> list[int]:
        """The seeds that evaluate every version."""
        return protocol.seeds(self.eval_seed_range, self.eval_episodes, self.eval_seed_offset)

    def collect_seeds(self, version: int) -> list[int]:
        """The seeds iteration `version` collects its rollouts on."""
        m = self.episodes_per_iteration
        return protocol.seeds("collect", m, self.collect_seed_offset + version * m)

    def validate(self) -> None:
        from vla.refine.plugin import make_plugin, plugin_names

        valid = [*METHODS, *plugin_names()]
        if self.method not in valid:
            raise ValueError(f"unknown refinement method '{self.method}'" + closest(self.method, valid))
        make_plugin(self)  # a plug-in checks its method_args here
        if not self.ckpt:
            raise ValueError("refine needs ckpt= (the pretrained checkpoint folder)")
        if not self.demos:
            raise ValueError("refine needs demos= (the EpisodeStore the policy was pretrained on)")
        if self.iterations < 1 or self.episodes_per_iteration < 1 or self.eval_episodes < 1:
            raise ValueError("iterations, episodes_per_iteration and eval_episodes must be >= 1")
        self.eval_seeds()  # an unknown range, or an offset that leaves it, fails here, naming it
        self.collect_seeds(self.iterations - 1)
        if self.intervener not in (None, "", "rac", "hg_dagger"):
            raise ValueError(f"intervener must be rac, hg_dagger or '' (none), got '{self.intervener}'")
        if self.method == "dagger" and self.intervener == "":
            raise ValueError("method=dagger labels every step with the intervener's expert; intervener='' has none")
        if self.group_shares:
            from vla.refine.weights import GROUPS

            bad = sorted(set(self.group_shares) - set(GROUPS))
            if bad:
                raise ValueError(f"group_shares: unknown group '{bad[0]}'" + closest(bad[0], GROUPS))
            if self.method not in METHODS:
                raise ValueError("group_shares is for the built-in methods; plug-ins have their own method_args")
        from vla.policy.ensemble import valid_every, valid_rate

        for key in ("temporal_ensemble", "collect_temporal_ensemble"):
            rate = getattr(self, key)
            if rate is not None and not valid_rate(rate):
                raise ValueError(f"{key} must be a finite rate (or null: off), got {rate}")
        if not valid_every(self.temporal_ensemble_every):
            raise ValueError(f"temporal_ensemble_every must be an integer >= 1, got {self.temporal_ensemble_every!r}")
        lam = self.habc.adv_lambda
        if lam is not None and not 0.0 <= lam <= 1.0:
            raise ValueError(f"habc.adv_lambda must be in [0, 1] (or null: one-step advantages), got {lam}")
        for name, feat in (("habc", self.habc.features), ("awr", self.awr.features)):
            if feat not in FEATURES:
                raise ValueError(f"{name}.features must be one of {FEATURES}, got '{feat}'")

    def share(self) -> float | None:
        if self.demo_share is not None:
            return self.demo_share
        return 0.5 if self.method == "rac" else None
