"""benchmarks/yaw_probe.py: the held-out R^2 of its ridge probe."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("yaw_probe", ROOT / "benchmarks/yaw_probe.py")
assert spec is not None and spec.loader is not None
yp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(yp)


def test_ridge_r2_finds_a_linear_target_and_not_noise() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 20))
    y = np.stack([x @ rng.normal(size=20), rng.normal(size=400)], axis=1)  # linear in x / unrelated
    r2 = yp.ridge_r2(x[:300], y[:300], x[300:], y[300:], alpha=1.0)
    assert r2[0] > 0.99 and r2[1] < 0.05
