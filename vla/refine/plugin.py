"""Refinement methods that live outside vla/ (world-model imagination, ReGuide) plug into the one
resumable loop (`vla.refine.loop.RefineRun`) through `vla.registry.REFINE_METHODS`: a method is a
collection rule plus a weighting rule, not a copied workspace.

A factory registered under a name gets the run's `RefineConfig` (its own settings are in
`cfg.method_args`, which it validates, rejecting unknown keys) and returns an object with:
- `collection_mode`: the intervener of its real rollouts ("" none, "rac", "hg_dagger");
- `after_collect(run, version)`: extra data once version k's real rollouts are in the store
  (imagined or guided episodes); must be resumable (skip what is done);
- `step_weights(run, version, model) -> (StepWeights, info)`: loss and sampling weights over the
  run's store for fine-tuning version k.
Optional:
- `collect_policy(run, version, ckpt) -> (policy spec, source)`: what runs the real rollouts of
  version k and the source they are recorded with (ReGuide: its guided policy, "guided");
- `train_setup(run, version, model, train_cfg) -> (model, train_cfg)`: the model and training
  settings that produce version k + 1 (ReGuide-FS: a freshly initialised model, more steps);
- `train_steps(run) -> int`: the step count at which a version is trained (with `train_setup`);
- versions that are not fine-tuned checkpoints (DSRL: the frozen base steered by a trained actor):
  `version_policy(run, version) -> policy spec` (evaluation and collection), `trained(run, version)
  -> bool` and `train_version(run, version) -> info` (makes version k + 1 instead of fine-tuning).
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

from vla.refine.weights import StepWeights


class RefineMethod(Protocol):
    collection_mode: str

    def after_collect(self, run: Any, version: int) -> None: ...

    def step_weights(self, run: Any, version: int, model: torch.nn.Module) -> tuple[StepWeights, dict[str, float]]: ...


def plugin_names() -> list[str]:
    from vla.registry import REFINE_METHODS

    return REFINE_METHODS.names()


def make_plugin(cfg: Any) -> RefineMethod | None:
    """The registered method object for `cfg.method`, or None for the built-in methods."""
    from vla.refine.weights import METHODS
    from vla.registry import REFINE_METHODS

    if cfg.method in METHODS:
        if cfg.method_args:
            raise ValueError(f"method_args is for plug-in methods ({', '.join(plugin_names())}), "
                             f"not '{cfg.method}'")
        return None
    return REFINE_METHODS.make(cfg.method, cfg=cfg)
