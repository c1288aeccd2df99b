"""sim.robustness: success against perturbation severity, paired by seed along the curve."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from sim.evaluate import EvalConfig
from sim.robustness import ablation_parts, clean_outcomes, plot_title, run_ablation, run_sweep


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


def test_an_ablation_takes_a_perturbation_apart_by_group_or_by_kind() -> None:
    kinds = {"action_noise": 0.02, "pose_noise": 2.0, "action_latency": 1.0, "lighting": 0.2}
    # groups in vla.perturb.GROUPS' order, each with its kinds in the spec's order
    assert ablation_parts(kinds, "group") == {"pose": ["pose_noise"], "image": ["lighting"],
                                              "action": ["action_noise", "action_latency"]}
    assert ablation_parts(kinds, "kind") == {k: [k] for k in kinds}
    with pytest.raises(ValueError, match="perturb_ablate must be one of group, kind, got 'groups'"):
        ablation_parts(kinds, "groups")


def test_an_ablation_evaluates_the_whole_and_each_part_left_out_on_the_same_seeds(tmp_path: Path) -> None:
    cfg = EvalConfig(task="pick_place", policy="expert", episodes=3, workers=1, videos=0, obs_mode="state",
                     cameras=[], horizon=60, perturb="action_latency:1,action_noise:0.02,pose_noise:2",
                     perturb_ablate="group", out_dir=str(tmp_path))
    result = run_ablation(cfg, progress=False)
    assert result["full"]["episodes"] == 3 and result["by"] == "group"
    rows = {r["part"]: r for r in result["without"]}
    assert set(rows) == {"pose", "action"}
    assert rows["action"]["perturb"] == "pose_noise:2"
    assert rows["pose"]["perturb"] == "action_latency:1,action_noise:0.02"
    assert rows["action"]["kinds"] == {"action_latency": 1.0, "action_noise": 0.02}
    # each gain is paired against the whole: its mean is the difference of the two success rates
    for r in result["without"]:
        assert r["gain"]["seeds"] == 3
        assert r["gain"]["mean"] == pytest.approx(r["success"] - result["full"]["success"])
    assert [r["gain"]["mean"] for r in result["without"]] == sorted((r["gain"]["mean"] for r in result["without"]),
                                                                     reverse=True)
    seeds = [json.loads((tmp_path / d / "summary.json").read_text())["seeds"]
             for d in ("full", "without_pose", "without_action")]
    assert seeds[0] == seeds[1] == seeds[2]  # paired by seed
    assert json.loads((tmp_path / "ablation.json").read_text())["without"][0]["part"] == result["without"][0]["part"]
    assert (tmp_path / "ablation.png").stat().st_size > 0


def test_an_ablation_needs_a_perturbation_and_is_not_a_sweep_too(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="perturb_ablate needs perturb=SPEC"):
        run_ablation(EvalConfig(task="pick_place", policy="expert", episodes=1, workers=1, perturb_ablate="kind",
                                out_dir=str(tmp_path)), progress=False)
    with pytest.raises(ValueError, match=r"unknown perturb_ablate 'grop'.*group"):
        EvalConfig(task="pick_place", policy="expert", perturb="realistic", perturb_ablate="grop").validate()
    with pytest.raises(ValueError, match="set one of them"):
        EvalConfig(task="pick_place", policy="expert", perturb="realistic", perturb_ablate="group",
                   perturb_sweep=[0, 1]).validate()


def test_a_plots_title_keeps_the_task_and_shortens_a_long_policy_path_from_the_left() -> None:
    long = {"task": "pick_place", "policy": "runs/s20/cam/c_vis_s0/train/checkpoints/step_00007000"}
    title = plot_title(long, width=40)
    assert title.startswith("pick_place: ...") and title.endswith("step_00007000") and len(title) == 40
    assert plot_title({"task": "lift", "policy": "expert"}) == "lift: expert"
