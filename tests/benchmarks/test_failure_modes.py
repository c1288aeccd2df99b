"""benchmarks/failure_modes.py: the outcome of an episode from its held flags and gripper commands."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("failure_modes", ROOT / "benchmarks/failure_modes.py")
assert spec is not None and spec.loader is not None
fm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fm)

F, T = False, True


def test_outcomes() -> None:
    assert fm.classify([F, T, T], [1, 1, 1], success=True) == ("success", None)
    assert fm.classify([F, F, F], [-1, 1, 1], success=False) == ("never_held", None)
    # lost at step 3 after the policy commanded closed on step 2: a slip
    assert fm.classify([F, T, T, F, F], [1, 1, 1, 1, 1], success=False) == ("slipped", 3)
    # ... after it commanded open: a release away from the goal
    assert fm.classify([F, T, T, F, F], [1, 1, -1, -1, -1], success=False) == ("released", 3)
    assert fm.classify([F, T, T, T], [1, 1, 1, 1], success=False) == ("other", None)  # held at the end
    assert fm.classify([F, T, F, T, F], [1, 1, 1, 1, 1], success=False) == ("other", 2)  # lost, re-grasped
