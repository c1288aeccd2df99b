"""`vla refine reguide-ft` and `vla refine reguide-fs`: ReGuide (arXiv 2606.28939) in the one
refinement loop (vla/refine/loop.py; registered in `vla.registry.REFINE_METHODS`).

Per iteration k (policy version k):
1. (once) the world model: the given `wm`, or one trained for `wm_steps` on the demos; the phase
   targets of `worldmodel.reguide` fitted on the demos (`<out>/reguide/`);
2. real rollouts of version k under phase-conditioned guidance (`reguide:` policy spec), recorded
   with source=guided; the steps where guidance acted are listed per episode in the collection's
   summary (`guided_steps`) and counted in the round's figures (`Added.info`, `iter_k/added.json`);
3. fine-tuning on the demos (`demo_share` of the sampled windows: the released code's expert
   sample weight, 0.2) and every successful rollout so far:
   - reguide-ft: from version k (ReGuide-FT);
   - reguide-fs: a freshly initialised model of the same architecture, `fs_steps` steps (ReGuide-FS).
`guide=false` is the matched-data ablation: the same number of rollouts without guidance, the
successful ones absorbed the same way (it is then filtered BC with ReGuide's data mix).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vla.data.schema import EXECUTED, Source
from vla.refine.method import Added, Collection, MethodArgs, RefineMethod, Rollouts, Run
from vla.refine.weights import StepWeights
from vla.registry import REFINE_METHODS


@dataclass
class ReGuideArgs(MethodArgs):
    wm: str = ""  # a trained world model (checkpoint or run folder); "" = train one on the demos
    wm_preset: str = "default"
    wm_overrides: list[str] = field(default_factory=list)
    wm_steps: int = 2000
    scale: float = 0.01  # guidance step on the clean-action estimate (the released code's 0.01)
    late: float = 0.3  # guided share of the last Euler steps (the released code: last 10-30 of 100)
    dims: str = ""  # action dims guidance may change, a:b ("" = all; 0:3 = the arm's position)
    guide: bool = True  # false: the matched-data ablation (unguided rollouts, successes absorbed alike)
    demo_share: float = 0.2  # share of sampled windows from the demos (the released code's expert weight)
    # "fixed": the demos get demo_share of the samples however few successes there are (the released
    # code, which absorbs ~75 successes); "floor": at least demo_share and at least their share of the
    # supervised steps, so that a handful of successes is not sampled 4x over the demos (seen here:
    # FT and FS fell from 0.32 to 0.04-0.30 on 2-16 absorbed successes)
    demo_share_mode: str = "fixed"
    fs_steps: int = 0  # reguide-fs: training steps from scratch; 0 = train.steps
    phases: dict[str, Any] = field(default_factory=dict)  # worldmodel.reguide.PhaseConfig fields

    def validate(self) -> None:
        if self.scale < 0 or not 0 <= self.late <= 1:
            raise ValueError(f"method_args: scale must be >= 0 and late in [0, 1], got {self.scale}, {self.late}")
        if not 0 <= self.demo_share < 1:
            raise ValueError(f"method_args.demo_share must be in [0, 1), got {self.demo_share}")
        if self.demo_share_mode not in ("fixed", "floor"):
            raise ValueError(f"method_args.demo_share_mode must be fixed or floor, got '{self.demo_share_mode}'")
        from worldmodel.reguide import parse_dims

        parse_dims(self.dims)
        if self.fs_steps < 0 or self.wm_steps < 1:
            raise ValueError("method_args: fs_steps must be >= 0 and wm_steps >= 1")


class ReGuide(RefineMethod):
    Args = ReGuideArgs
    args: ReGuideArgs
    intervener = ""  # no person: guidance is the only help
    from_scratch = False

    def check(self) -> None:
        from vla.config import from_dict
        from worldmodel.reguide import PhaseConfig

        self.phase_cfg = from_dict(PhaseConfig, dict(self.args.phases), "method_args.phases")
        self.phase_cfg.validate()
        if self.args.fs_steps and not self.from_scratch:
            raise ValueError("method_args.fs_steps is for reguide-fs (reguide-ft fine-tunes for train.steps)")

    # ------------------------------------------------------------------ guidance targets
    def phases_dir(self, run: Run) -> Path:
        return run.out / "reguide" / "phases"

    def prepare_guidance(self, run: Run) -> Path:
        """The world model and the phase targets, made once per run (resumable)."""
        from worldmodel.imagination_refine import fit_run_world_model
        from worldmodel.reguide import fit_phase_targets

        folder = self.phases_dir(run)
        if (folder / "phases.json").is_file():
            return folder
        c = self.args
        wm_dir = run.out / "reguide" / "wm"
        fit_run_world_model(run, wm_dir, c.wm, c.wm_preset, c.wm_overrides, lambda base: base, c.wm_steps)
        targets = fit_phase_targets(run.store_path, wm_dir, self.phase_cfg, task=self.run_cfg.task)
        targets.save(folder)
        return folder

    def collection(self, run: Run, version: int) -> Collection:
        from worldmodel.reguide import guided_spec

        ckpt = run.version_policy(version)
        if not self.args.guide:
            return Collection(policy=ckpt, intervener=self.intervener)
        folder = self.prepare_guidance(run)
        return Collection(policy=guided_spec(ckpt, folder, self.args.scale, self.args.late, self.args.dims),
                          intervener=self.intervener, source=Source.GUIDED)

    def augment(self, run: Run, rollouts: Rollouts) -> Added:
        """Nothing beyond the rollouts; the round's figures: how much guidance acted."""
        eps = rollouts.summary.get("episodes_detail", [])
        guided = [len(e.get("guided_steps", [])) for e in eps]
        steps = [e["length"] for e in eps]
        return Added(info={
            "guide": self.args.guide, "episodes": len(eps), "successes": int(sum(e["success"] for e in eps)),
            "guided_steps": int(sum(guided)), "steps": int(sum(steps)),
            "guided_step_share": float(sum(guided) / max(sum(steps), 1)),
            "guided_episodes": int(sum(g > 0 for g in guided)),
            "success_guided_episodes": int(sum(e["success"] and len(e.get("guided_steps", [])) > 0 for e in eps))})

    # ------------------------------------------------------------------ fine-tuning
    def train_steps(self) -> int:
        steps = self.run_cfg.train.steps
        return (self.args.fs_steps or steps) if self.from_scratch else steps

    def setup_training(self, run: Run, version: int, model: torch.nn.Module, train_cfg: Any) -> tuple[Any, Any]:
        if not self.from_scratch:
            return model, train_cfg
        from vla.policy.model import VLAModel

        torch.manual_seed(train_cfg.seed)
        fresh = VLAModel(model.cfg, language=model.language)  # same architecture and instruction table
        fresh.normalizer.load_state_dict(model.normalizer.state_dict())
        return fresh, type(train_cfg)(**{**asdict(train_cfg), "steps": self.train_steps()})

    def weights(self, run: Run, version: int, model: torch.nn.Module, added: list[Added]
                ) -> tuple[StepWeights, dict[str, float]]:
        from vla.data.store import EpisodeStore
        from vla.refine.weights import demo_loss, sample_distribution

        with EpisodeStore.open(run.store_path) as store:
            table = store.table()
        loss, demo = demo_loss(table)
        absorbed = np.isin(table.source, EXECUTED) & np.asarray(table.success, bool)
        for e in np.flatnonzero(absorbed):
            loss[table.episode_starts[e]:table.episode_ends[e]] = 1.0
        share = demo_share(int(demo.sum()), int((loss > 0).sum() - demo.sum()), self.args.demo_share,
                           self.args.demo_share_mode)
        sample = sample_distribution(loss, demo, share)
        return StepWeights(loss=loss, sample=sample), {
            "absorbed_episodes": float(absorbed.sum()),
            "absorbed_guided_episodes": float((absorbed & (table.source == Source.GUIDED)).sum()),
            "supervised_steps": float((loss > 0).sum())}


def demo_share(demo_steps: int, absorbed_steps: int, share: float, mode: str) -> float:
    """The demos' share of the sampled windows: all of them with nothing absorbed; `share` ("fixed"),
    or the larger of `share` and the demos' share of the supervised steps ("floor")."""
    if absorbed_steps <= 0:
        return 1.0
    if mode == "floor":
        return max(share, demo_steps / (demo_steps + absorbed_steps))
    return share


@REFINE_METHODS.register("reguide_ft")
class ReGuideFt(ReGuide):
    """ReGuide-FT: each version fine-tuned from the last."""


@REFINE_METHODS.register("reguide_fs")
class ReGuideFs(ReGuide):
    """ReGuide-FS: each version a freshly initialised model of the same architecture (`fs_steps`)."""

    from_scratch = True


__all__ = ["ReGuide", "ReGuideArgs", "ReGuideFs", "ReGuideFt", "demo_share"]
