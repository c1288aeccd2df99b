"""benchmarks/bench_habc.py: the observation overrides every evaluation and run of a benchmark shares
(state mode for the seeds' runs, the task's cameras for the issue's camera run)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tests.benchmarks.helpers import load_script

bh = load_script("bench_habc")


def test_run_obs_is_state_mode_unless_cameras_and_appends_run_args() -> None:
    state = bh.run_obs(argparse.Namespace(cameras=False, run_args=""))
    assert state == ("obs_mode=state", "cameras=[]")
    cams = bh.run_obs(argparse.Namespace(cameras=True, run_args="n_action_steps=4  image_size=84"))
    # no state override left: the refine config's defaults (image mode, the task's cameras) apply
    assert cams == ("n_action_steps=4", "image_size=84")
    # run args come last, so they win over the mode's own overrides
    assert bh.run_obs(argparse.Namespace(cameras=False, run_args="cameras=[agentview]"))[-1] == "cameras=[agentview]"


def test_share_overrides_fix_every_group_and_pa_rl_gets_its_demo_share() -> None:
    assert bh.share_overrides("habc", "autonomous", (0.4, 0.3, 0.3)) == \
        "method_args.group_shares={demo: 0.4, correction: 0.3, policy: 0.3}"
    # PA-RL: demos + corrections with a person, demos over demos + policy without one
    assert bh.share_overrides("pa_rl", "interventions", (0.4, 0.3, 0.3)) == "method_args={demo_share: 0.700}"
    assert bh.share_overrides("pa_rl", "autonomous", (0.4, 0.3, 0.3)) == "method_args={demo_share: 0.571}"


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
    ep = bh.episode_paired(tmp_path, "interventions", "habc", "sft", 0, 3)
    assert ep["seeds"] == 4 and ep["better"] == 1 and ep["worse"] == 1 and ep["mean"] == 0.0
    assert ep["lo"] < 0 < ep["hi"]


def test_reached_at_needs_a_gain_over_the_base_to_reach() -> None:
    import numpy as np

    steps = np.array([0, 100, 250, 400])
    # RaC reaches HG-DAgger's 0.6 at version 2, with 250 of HG-DAgger's 500 steps
    assert bh.reached_at(np.array([0.3, 0.5, 0.6, 0.55]), steps, 0.6, 500) == 0.5
    assert bh.reached_at(np.array([0.3, 0.5, 0.55, 0.55]), steps, 0.6, 500) is None  # never
    # HG-DAgger ended below the base: the base's own success is no correction's doing, so no ratio (not 0)
    assert bh.reached_at(np.array([0.5, 0.44, 0.5, 0.38]), steps, 0.48, 500) is None
