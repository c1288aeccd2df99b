"""experiments/action_noise_dims.py: the noise reaches only the chosen dimensions, through the evaluator's own
worker subprocesses, and the tilt log reads the hand's tilt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_noise_on_the_tilt_only_tilts_the_expert_more_than_on_the_yaw_only(tmp_path: Path) -> None:
    out = tmp_path / "dims"
    env = dict(os.environ, MUJOCO_GL="osmesa", PYOPENGL_PLATFORM="osmesa")
    subprocess.run([sys.executable, "experiments/action_noise_dims.py", "expert", "--out", str(out), "--episodes",
                    "2", "--severity", "0.1", "--only", "tilt", "yaw", "--extra", "workers=1", "obs_mode=state",
                    "expert_gain=0.7"], cwd=REPO, env=env, check=True, capture_output=True, timeout=600)
    groups = json.loads((out / "results.json").read_text())["groups"]
    assert set(groups) == {"clean", "tilt", "yaw"}
    early = {g: r["tilt_deg"]["steps_10_30"] for g, r in groups.items()}
    # the expert rights the hand each step, so its tilt stays at about one step's noise; on the yaw only the
    # hand stays as upright as clean
    assert early["tilt"] > 1.5 * early["yaw"] and early["yaw"] < 1.5 * early["clean"]
    assert groups["tilt"]["minus_clean"]["seeds"] == 2
