"""benchmarks/bench_habc.py: the observation overrides every evaluation and run of a benchmark shares
(state mode for the seeds' runs, the task's cameras for the issue's camera run)."""

from __future__ import annotations

import argparse

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
