"""Name -> factory registries, so that the CLI and configs refer to tasks and methods by name while
vla/ never imports sim/, real/ or worldmodel/: a registry imports vla/'s own providers and those the
installed plugins list for its kind (vla/plugins.py), which register themselves on import."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from vla.data.schema import closest

T = TypeVar("T")


class Registry(Generic[T]):
    """A named registry; `modules` (vla/'s own) and the plugins' modules for `kind` are imported lazily
    the first time a name is looked up."""

    def __init__(self, kind: str, modules: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self._modules = modules
        self._loaded = False
        self._entries: dict[str, Callable[..., T]] = {}

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def decorator(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._entries and self._entries[name] is not factory:
                raise ValueError(f"{self.kind} '{name}' is registered twice")
            self._entries[name] = factory
            return factory

        return decorator

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True
            from vla.plugins import provided

            for module in (*self._modules, *provided(self.kind)):
                try:
                    importlib.import_module(module)
                except ModuleNotFoundError as e:
                    # A provider package that is not installed is skipped; a broken import inside
                    # an installed provider is an error.
                    if e.name is None or not module.startswith(e.name):
                        raise

    def names(self) -> list[str]:
        self._load()
        return sorted(self._entries)

    def get(self, name: str) -> Callable[..., T]:
        self._load()
        if name not in self._entries:
            from vla.plugins import plugins

            hint = "" if plugins() else (" (no package registered through the vla.plugins entry point: reinstall "
                                         "the project, `make install`, or remove a stale vla_stack.egg-info)")
            raise KeyError(f"unknown {self.kind} '{name}'" + closest(name, self.names()) + hint)
        return self._entries[name]

    def make(self, name: str, **kwargs: Any) -> T:
        return self.get(name)(**kwargs)


# Tasks: factories returning a gymnasium.Env (sim/ registers them).
TASKS: Registry[Any] = Registry("task")
# Stages of the main job (`vla run`): vla/job.py registers the core ones, sim/ and real/ theirs.
STAGES: Registry[Any] = Registry("stage", modules=("vla.job",))
# Periodic evaluators for training (`evaluator(model, step) -> metrics`): sim/ registers "sim".
EVALUATORS: Registry[Any] = Registry("evaluator")
# Refinement methods (vla/refine/method.py), each a unit the one loop drives: vla/refine/methods/
# registers the built-in ones, worldmodel/ "imagination", "reguide_ft" and "reguide_fs".
REFINE_METHODS: Registry[Any] = Registry("refinement method", modules=("vla.refine.methods",))
# Policy specs with a prefix ("NAME:ARGS") that wrap a policy, e.g. worldmodel's test-time chunk
# selection "wm-select:...", ReGuide's guided policy "reguide:...", DSRL's steered one "dsrl:..." and the
# mean of several trainings' chunks "mean:..." (vla.policy.specs.load_spec looks them up).
POLICY_SPECS: Registry[Any] = Registry("policy spec", modules=("vla.refine.dsrl_policy", "vla.policy.mean"))
