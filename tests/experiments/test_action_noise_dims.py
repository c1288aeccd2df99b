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


def run(out: Path, *args: str) -> dict:
    env = dict(os.environ, MUJOCO_GL="osmesa", PYOPENGL_PLATFORM="osmesa")
    subprocess.run([sys.executable, "experiments/action_noise_dims.py", "expert", "--out", str(out), "--episodes",
                    "2", "--severity", "0.1", "--extra", "workers=1", "obs_mode=state", "expert_gain=0.7", "--only",
                    *args], cwd=REPO, env=env, check=True, capture_output=True, timeout=600)
    return json.loads((out / "results.json").read_text())["groups"]


@pytest.mark.slow
def test_tilt_noise_tilts_the_expert_more_than_yaw_noise_and_righting_holds_it_upright(tmp_path: Path) -> None:
    groups = run(tmp_path / "dims", "tilt", "yaw")
    assert set(groups) == {"clean", "tilt", "yaw"}
    early = {g: r["tilt_deg"]["steps_10_30"] for g, r in groups.items()}
    # the expert rights the hand each step, so its tilt stays at about one step's noise; on the yaw only the
    # hand stays as upright as clean
    assert early["tilt"] > 1.5 * early["yaw"] and early["yaw"] < 1.5 * early["clean"]
    assert groups["tilt"]["minus_clean"]["seeds"] == 2
    # righted every step, the hand stays near upright under the same tilt noise
    righted = run(tmp_path / "righted", "tilt", "--right-tilt")
    assert righted["tilt"]["tilt_deg"]["steps_10_30"] < 0.5 * early["tilt"]
