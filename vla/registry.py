"""Name -> factory registries, so that the CLI and configs refer to tasks and algorithms by name
while vla/ never imports sim/, real/ or worldmodel/ (they register themselves on import)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from vla.data.schema import closest

T = TypeVar("T")


class Registry(Generic[T]):
    """A named registry; `modules` are imported lazily the first time a name is looked up."""

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
            for module in self._modules:
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
            raise KeyError(f"unknown {self.kind} '{name}'" + closest(name, self.names()))
        return self._entries[name]

    def make(self, name: str, **kwargs: Any) -> T:
        return self.get(name)(**kwargs)


# Tasks: factories returning a gymnasium.Env. sim/ registers them in sim/tasks/__init__.py.
TASKS: Registry[Any] = Registry("task", modules=("sim.tasks",))
# Stages of the main job (`vla run`): vla/job.py registers the core ones, sim/ and real/ theirs.
STAGES: Registry[Any] = Registry("stage", modules=("vla.job", "sim.stages", "real.stages"))
# Periodic evaluators for training (`evaluator(model, step) -> metrics`): sim/ registers "sim".
EVALUATORS: Registry[Any] = Registry("evaluator", modules=("sim.evaluate",))
# Refinement methods (vla/refine/method.py), each a unit the one loop drives: vla/refine/methods/
# registers the built-in ones, worldmodel/ "imagination", "reguide_ft" and "reguide_fs".
REFINE_METHODS: Registry[Any] = Registry("refinement method",
                                         modules=("vla.refine.methods", "worldmodel.imagination",
                                                  "worldmodel.reguide_refine"))
# Policy specs with a prefix ("NAME:ARGS") that wrap a policy, e.g. worldmodel's test-time chunk
# selection "wm-select:...", ReGuide's guided policy "reguide:..." and DSRL's steered one "dsrl:..."
# (vla.policy.specs.load_spec looks them up).
POLICY_SPECS: Registry[Any] = Registry("policy spec", modules=("worldmodel.select", "worldmodel.reguide",
                                                                "real.selection", "vla.refine.dsrl_policy"))


def spec_args(name: str, args: str, valid: tuple[str, ...], required: tuple[str, ...], example: str
              ) -> dict[str, str]:
    """The key=value arguments of a "NAME:ARGS" policy spec, checked: one-line errors name the part
    that is not key=value, an unknown key (with the close match) or a missing one."""
    out = {}
    for part in filter(None, args.split(",")):
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"{name}: '{part}' is not key=value (spec: {example})")
        out[key.strip()] = value.strip()
    unknown = sorted(set(out) - set(valid))
    if unknown:
        raise ValueError(f"{name}: unknown key '{unknown[0]}'{closest(unknown[0], valid)}")
    for need in required:
        if need not in out:
            raise ValueError(f"{name}: missing {need}= (spec: {example})")
    return out


def spec_loader(load: Callable[[str], Any] | None, seed: int = 0) -> Callable[[str], Any]:
    """How a "NAME:ARGS" spec loads the policy it wraps: the caller's `load` (`vla.policy.specs.load_spec`
    passes one; the evaluator's also knows the simulator's built-ins), else any spec seeded with `seed`."""
    if load is not None:
        return load
    from vla.policy.specs import load_spec

    return lambda spec: load_spec(spec, seed=seed)
