"""The benchmark and experiment scripts are not a package: the tests load one by its path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_script(name: str, folder: str = "benchmarks") -> ModuleType:
    """FOLDER/NAME.py as a module. benchmarks/ goes on sys.path first, as it is when the script runs
    (a benchmark imports its siblings `harness` and `results_io`; an experiment may import a benchmark's)."""
    for path in (ROOT / "benchmarks", ROOT / folder):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    spec = importlib.util.spec_from_file_location(name, ROOT / folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
