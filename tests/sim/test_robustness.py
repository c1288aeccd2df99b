"""sim.robustness: success against perturbation severity, paired by seed along the curve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.evaluate import EvalConfig
from sim.robustness import run_sweep


def test_a_sweep_evaluates_the_same_seeds_at_each_severity_and_writes_the_curve(tmp_path: Path) -> None:
    cfg = EvalConfig(task="pick_place", policy="expert", episodes=3, workers=1, videos=0, obs_mode="state",
                     cameras=[], horizon=60, perturb="action_latency:1,pose_noise:2", perturb_sweep=[0, 2],
                     out_dir=str(tmp_path))
    result = run_sweep(cfg, progress=False)
    assert [p["perturb"] for p in result["points"]] == ["none", "action_latency:2,pose_noise:4"]
    assert all(p["episodes"] == 3 and "minus_clean" in p for p in result["points"])
    assert result["points"][0]["minus_clean"]["mean"] == 0.0  # the clean point against itself
    assert json.loads((tmp_path / "robustness.json").read_text())["seed_range"] == "tune"
    assert (tmp_path / "robustness.png").stat().st_size > 0
    seeds = [json.loads((tmp_path / f"sweep_{f}" / "summary.json").read_text())["seeds"] for f in ("0", "2")]
    assert seeds[0] == seeds[1]  # paired by seed


def test_a_sweep_without_a_perturbation_is_refused(tmp_path: Path) -> None:
    cfg = EvalConfig(task="pick_place", policy="expert", episodes=1, workers=1, perturb_sweep=[0, 1],
                     out_dir=str(tmp_path))
    with pytest.raises(ValueError, match="perturb_sweep needs perturb=SPEC"):
        run_sweep(cfg, progress=False)
