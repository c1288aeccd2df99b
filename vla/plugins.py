"""The packages above vla/ (sim/, real/, worldmodel/) plug into it without vla/ naming them: each
declares a `vla.plugins` entry point (pyproject.toml) whose module has `PROVIDES`, a dict from what
it adds to the modules that add it:
- a registry's kind ("task", "stage", "evaluator", "refinement method", "policy spec"): modules whose
  import registers entries (`vla.registry.Registry` imports them on first lookup);
- "cli": modules with `register(app)` adding `vla` subcommands;
- "config": {kind: "module:Class"} for `vla config show KIND`.
A plugin whose package is not installed is skipped; a broken import inside an installed one is an
error."""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import entry_points
from typing import Any

GROUP = "vla.plugins"


@cache
def plugins() -> tuple[Any, ...]:
    """The `PROVIDES` of every installed plugin, in entry-point name order."""
    out = []
    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        try:
            module = importlib.import_module(ep.value)
        except ModuleNotFoundError as e:
            if e.name is not None and ep.value.startswith(e.name):  # the plugin's package is not there
                continue
            raise
        out.append(getattr(module, "PROVIDES", {}))
    return tuple(out)


def provided(kind: str) -> tuple[str, ...]:
    """The modules every installed plugin lists for `kind` (a registry's kind or "cli")."""
    return tuple(m for p in plugins() for m in p.get(kind, ()))


def provided_configs() -> dict[str, str]:
    """{config kind: "module:Class"} the installed plugins add."""
    return {k: v for p in plugins() for k, v in p.get("config", {}).items()}
