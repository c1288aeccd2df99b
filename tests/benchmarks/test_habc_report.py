"""benchmarks/habc_report.py: the HABC benchmark's paired comparisons and efficiency figures."""

from __future__ import annotations

from pathlib import Path

from tests.benchmarks.helpers import load_script

hr = load_script("habc_report")


def test_episode_paired_compares_one_seeds_final_versions_episode_by_episode(tmp_path: Path) -> None:
    import json

    outcomes = {"habc": [True, True, False, False], "sft": [True, False, False, True]}
    for m, wins in outcomes.items():
        d = tmp_path / "runs" / "interventions" / m / "seed0" / "iter_03" / "eval"
        d.mkdir(parents=True)
        detail = [{"seed": 100000 + i, "success": w, "length": 40} for i, w in enumerate(wins)]
        if m == "sft":
            detail.append({"seed": 999, "success": True, "length": 40})  # an episode the other did not run
        (d / "summary.json").write_text(json.dumps({"episodes_detail": detail}))
    ep = hr.episode_paired(tmp_path, "interventions", "habc", "sft", 0, 3)
    assert ep["seeds"] == 4 and ep["better"] == 1 and ep["worse"] == 1 and ep["mean"] == 0.0
    assert ep["lo"] < 0 < ep["hi"]


def test_reached_at_needs_a_gain_over_the_base_to_reach() -> None:
    import numpy as np

    steps = np.array([0, 100, 250, 400])
    # RaC reaches HG-DAgger's 0.6 at version 2, with 250 of HG-DAgger's 500 steps
    assert hr.reached_at(np.array([0.3, 0.5, 0.6, 0.55]), steps, 0.6, 500) == 0.5
    assert hr.reached_at(np.array([0.3, 0.5, 0.55, 0.55]), steps, 0.6, 500) is None  # never
    # HG-DAgger ended below the base: the base's own success is no correction's doing, so no ratio (not 0)
    assert hr.reached_at(np.array([0.5, 0.44, 0.5, 0.38]), steps, 0.48, 500) is None
