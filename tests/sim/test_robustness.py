"""sim.robustness: success against perturbation severity, paired by seed along the curve."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from sim.evaluate import EvalConfig
from sim.robustness import clean_outcomes, run_sweep


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


def test_the_clean_point_is_read_from_an_earlier_evaluation_of_the_same_policy_and_execution(tmp_path: Path) -> None:
    """The main job's robustness stage reads x0 from the refine stage's evaluation: only when it differs in
    nothing but its number of seeds, videos and folder."""
    done = EvalConfig(task="pick_place", policy="expert", episodes=4, workers=1, videos=0, obs_mode="state",
                      horizon=60, out_dir=str(tmp_path / "eval"))  # cameras unset: the summary has the resolved ones
    from sim.evaluate import run_evaluation, seed_outcomes

    clean = seed_outcomes(run_evaluation(done, progress=False))
    sweep = replace(done, episodes=3, out_dir=str(tmp_path / "sweep"), perturb="action_latency:1",
                    perturb_sweep=[0, 1])
    reused = clean_outcomes(tmp_path / "eval" / "summary.json", sweep)
    assert reused == clean
    result = run_sweep(sweep, progress=False, clean=reused)
    x0, x1 = result["points"]
    assert x0["reused"] and not (tmp_path / "sweep" / "sweep_0").exists()  # not run again
    assert x0["successes"] == sum(clean[s] for s in sweep.seed_list()) and x0["episodes"] == 3
    assert "reused" not in x1 and (tmp_path / "sweep" / "sweep_1" / "summary.json").exists()
    # anything else different (here the horizon, or the policy) and the clean point is run
    assert clean_outcomes(tmp_path / "eval" / "summary.json", replace(sweep, horizon=80)) is None
    assert clean_outcomes(tmp_path / "eval" / "summary.json", replace(sweep, policy="random")) is None
    assert clean_outcomes(tmp_path / "missing.json", sweep) is None


def test_the_curve_draws_a_point_that_succeeded_every_time(tmp_path: Path) -> None:
    # a policy that went 50/50 at one severity stopped the main job here once: its interval, as run_sweep makes
    # it, ended a hair below 1 and the error bar went negative
    from sim.robustness import plot_sweep
    from vla.metrics import wilson_interval

    result = {"perturb": "realistic", "task": "pick_place", "policy": "p", "points": [
        {"factor": f, "success": k / 50, "wilson95": list(wilson_interval(k, 50))} for f, k in ((0.0, 50), (1.0, 30))]}
    path = plot_sweep(result, tmp_path / "curve.png")
    assert path.exists() and path.stat().st_size > 0
