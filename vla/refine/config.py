"""Typed configuration of a refinement run (`vla refine`), loaded from `configs/refine/*.yaml`
presets with `key=value` overrides through the project's one loader (`vla.config.load_config`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from vla import protocol
from vla.data.schema import closest
from vla.evaluation import Execution
from vla.refine.critics import CriticConfig
from vla.train.config import TrainConfig


@dataclass
class RefineConfig(Execution):
    """A refinement run: how its evaluations and rollouts run (vla.evaluation.Execution: task, cameras,
    image_size, horizon, obs_mode, n_action_steps, temporal_ensemble(_every), workers, backend,
    ray_address; the same in rollouts and evaluations) and what the loop and its method need."""

    obs_mode: str = "image"  # image | state (state: object poses in the state vector)
    # a registered refinement method (`vla refine --help` lists them): habc, rac, hg_dagger, dagger, sft,
    # filtered_bc, awr, pa_rl, dsrl, imagination, reguide_ft, reguide_fs
    method: str = "habc"
    ckpt: str = ""  # the pretrained checkpoint folder (policy version 0)
    demos: str = ""  # EpisodeStore of demonstrations, copied into the run's own store
    out_dir: str = "runs/refine"
    iterations: int = 4  # collect -> train rounds; iteration k evaluates policy version k
    episodes_per_iteration: int = 20  # rollouts collected with the intervener per iteration
    eval_episodes: int = 50
    # evaluate every k-th version and the last (version 0 always): the rounds between are trained on but
    # not measured (the main job measures only before and after, a 200-episode evaluation saved per round)
    eval_every: int = 1
    # the same seed list evaluates every version: eval_episodes seeds from eval_seed_offset of a named
    # range (vla.protocol): tune while a setting is being chosen, report for a figure
    eval_seed_range: str = "tune"
    eval_seed_offset: int = 0
    # iteration k collects the collect range's seeds offset + k * episodes_per_iteration + i
    collect_seed_offset: int = 200_000
    # the rollouts' own temporal ensemble rate when it differs from the evaluations' (None: temporal_ensemble's): with
    # filtered_bc and intervener='' the policy imitates its own ensembled successes, which it is then
    # evaluated without (experiments/refine_budget.py `fbc100_te`)
    collect_temporal_ensemble: float | None = None
    # the rollouts' domain randomisation (vla.perturb kinds; each episode draws its severities from [0, the
    # spec's]), e.g. a real arm's actuator errors: the person corrects the policy where those errors put it, and
    # the recorded actions are the commands, not what the arm executed. The evaluations keep the run's own
    # `randomize` (none by default); "none": the rollouts keep it too
    collect_randomize: str = "none"
    intervener_args: dict[str, float] = field(default_factory=dict)  # when the simulated person steps in
    # the collection intervener instead of the method's own (rac | hg_dagger | "" none: HABC's
    # autonomous setting, rollouts with only their sparse outcome)
    intervener: str | None = None
    # a window of the policy's own steps supervises only the chunk the policy executed, not the seam
    # into the next one (vla.refine.weights.executed_chunk_ends)
    own_chunk_only: bool = False
    # the fine-tune keeps the camera encoders (backbone, token projection) as pretrained and trains the
    # rest: a few hundred correction frames then move the policy over features the demos fixed, as a
    # state policy's corrections move it over coordinates it already reads (main_job_notes.md)
    freeze_vision: bool = False
    seed: int = 0
    videos: int = 1  # MP4s per evaluation
    train: TrainConfig = field(default_factory=TrainConfig)
    critic: CriticConfig = field(default_factory=CriticConfig)  # how a method that has a critic fits it
    # the method's own settings (its `Args` dataclass, vla/refine/methods/ and worldmodel/), e.g. habc:
    # {beta: 2.0, outcome_gate: true}, rac: {demo_share: 0.5}, imagination: {samples: 8, wm_steps: 2000}
    method_args: dict[str, Any] = field(default_factory=dict)

    RENAMED: ClassVar[dict[str, str]] = {
        "eval_seed_start": "evaluation seeds come from a named range: eval_seed_range=tune|report and "
                           "eval_seed_offset=N (vla.protocol)",
        "collect_seed_start": "collection seeds are offsets in the protocol's collect range: collect_seed_offset=N "
                              "(the collect range starts at 0, so the old value works unchanged)",
        "habc": "a method's settings are method_args.KEY (habc.beta -> method_args.beta); how its critic is "
                "fitted is critic.KEY (habc.steps -> critic.steps)",
        "awr": "a method's settings are method_args.KEY (awr.beta -> method_args.beta); how its critic is "
               "fitted is critic.KEY (awr.steps -> critic.steps)",
        "demo_share": "the demos' share of the sampled windows is the method's: method_args.demo_share=S",
        "group_shares": "fixed shares per group are the method's: method_args.group_shares={demo: 1.0}"}

    def evaluates(self, version: int) -> bool:
        """Whether the loop evaluates policy version `version` (eval_every)."""
        return version % self.eval_every == 0 or version == self.iterations

    def eval_seeds(self) -> list[int]:
        """The seeds that evaluate every version."""
        return protocol.seeds(self.eval_seed_range, self.eval_episodes, self.eval_seed_offset)

    def collect_seeds(self, version: int) -> list[int]:
        """The seeds iteration `version` collects its rollouts on."""
        m = self.episodes_per_iteration
        return protocol.seeds("collect", m, self.collect_seed_offset + version * m)

    def validate(self) -> None:
        from vla.registry import REFINE_METHODS

        valid = REFINE_METHODS.names()
        if self.method not in valid:
            raise ValueError(f"unknown refinement method '{self.method}'" + closest(self.method, valid))
        REFINE_METHODS.get(self.method)(self)  # the method checks its method_args and the run's settings here
        self.critic.validate()
        if not self.ckpt:
            raise ValueError("refine needs ckpt= (the pretrained checkpoint folder)")
        if not self.demos:
            raise ValueError("refine needs demos= (the EpisodeStore the policy was pretrained on)")
        if self.iterations < 1 or self.episodes_per_iteration < 1 or self.eval_episodes < 1 or self.eval_every < 1:
            raise ValueError("iterations, episodes_per_iteration, eval_episodes and eval_every must be >= 1")
        self.eval_seeds()  # an unknown range, or an offset that leaves it, fails here, naming it
        self.collect_seeds(self.iterations - 1)
        if self.intervener not in (None, "", "rac", "hg_dagger"):
            raise ValueError(f"intervener must be rac, hg_dagger or '' (none), got '{self.intervener}'")
        self.check_execution()
        from vla.policy.ensemble import valid_rate

        rate = self.collect_temporal_ensemble
        if rate is not None and not valid_rate(rate):
            raise ValueError(f"collect_temporal_ensemble must be a finite rate (or null: off), got {rate}")
        if self.collect_randomize != "none":
            # the rollouts' own execution, checked as any evaluation's is (a bad kind, or perturb set as well)
            # here rather than at the first collection, after version 0's evaluation
            try:
                replace(self, randomize=self.collect_randomize).check_env()
            except ValueError as e:
                raise ValueError(f"collect_randomize: {e}") from None
