"""experiments/hand_self_calibration.py: its measure."""

from __future__ import annotations

import numpy as np

from tests.benchmarks.helpers import load_script

calibrated_errors_mm = load_script("hand_self_calibration", "experiments").calibrated_errors_mm


def test_a_shared_offset_is_removed_by_its_episode_mean_and_in_time_by_the_running_mean() -> None:
    episode = np.repeat([0, 1], 4)
    offset = np.repeat([[0.01, 0, 0], [0, -0.02, 0]], 4, axis=0)  # each episode's camera moved once
    err = offset.copy()  # the object is off by exactly what the hand is
    got = calibrated_errors_mm(err, offset, episode)
    assert got["as is"] == 15.0 and got["episode mean"] == 0.0 and got["running mean"] == 0.0
    noisy = offset + np.array([[0.002, 0, 0], [-0.002, 0, 0]] * 4)  # the hand's reading jitters about it
    got = calibrated_errors_mm(err, noisy, episode)
    assert got["episode mean"] == 0.0 and 0.0 < got["running mean"] < 2.0  # the running mean settles as it goes
