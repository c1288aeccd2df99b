"""experiments/yaw_probe.py: the held-out R^2 of its ridge probe."""

from __future__ import annotations

import numpy as np

from tests.benchmarks.helpers import load_script

yp = load_script("yaw_probe", "experiments")


def test_ridge_r2_finds_a_linear_target_and_not_noise() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 20))
    y = np.stack([x @ rng.normal(size=20), rng.normal(size=400)], axis=1)  # linear in x / unrelated
    r2 = yp.ridge_r2(x[:300], y[:300], x[300:], y[300:], alpha=1.0)
    assert r2[0] > 0.99 and r2[1] < 0.05
