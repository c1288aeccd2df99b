"""experiments/failure_modes.py: the outcome of an episode from its held flags and gripper commands."""

from __future__ import annotations

from tests.benchmarks.helpers import load_script

fm = load_script("failure_modes", "experiments")

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


def test_fold_yaw() -> None:
    assert fm.fold_yaw(0.0) == 0.0
    assert fm.fold_yaw(90.0) == 0.0  # a cube looks the same every 90 degrees
    assert fm.fold_yaw(50.0) == -40.0
    assert fm.fold_yaw(-44.0) == -44.0


def _episode(start: float, grasp: float | None, outcome: str) -> dict:
    return {"start_yaw_deg": start, "grasp": None if grasp is None else {"yaw_deg": grasp}, "outcome": outcome}


def test_turn_summary_tells_a_hand_that_turns_from_one_that_does_not() -> None:
    starts = [2.0, 10.0, 20.0, 28.0, 35.0, 44.0]
    stays = fm.turn_summary([_episode(s, s + 1.0, "success" if s < 30 else "slipped") for s in starts])
    assert stays["grasp_yaw_follows_start_r"] > 0.99
    assert stays["success_start_yaw_30_45"] == (0.0, 2)
    assert stays["success_start_yaw_0_15"] == (1.0, 2)
    grasps = [3.0, 1.0, 4.0, 2.0, 3.0, 1.0]
    turns = fm.turn_summary([_episode(s, g, "success") for s, g in zip(starts, grasps, strict=True)])
    assert abs(turns["grasp_yaw_follows_start_r"]) < 0.5
    # never-held episodes count in the success rates but have no grasp to correlate
    assert fm.turn_summary([_episode(40.0, None, "never_held")])["success_start_yaw_30_45"] == (0.0, 1)
