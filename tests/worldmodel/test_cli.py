"""`vla wm` as users run it (a real subprocess per call): train -> eval -> rank -> imagine on a real
store, and one-line errors for bad input."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.worldmodel.test_evaluate_rank import tiny_policy

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def vla(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vla.cli", "wm", *map(str, args)], capture_output=True, text=True,
                          timeout=600)


def one_line_error(res: subprocess.CompletedProcess) -> str:
    assert res.returncode == 2, res.stderr[-2000:]
    lines = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr[-2000:]
    return lines[0]


def test_train_eval_rank_imagine(pick_place_store: Path, tmp_path: Path) -> None:
    run = tmp_path / "wm"
    res = vla("train", pick_place_store, "--out", run, "--preset", "debug", "model.probe_dims=[9,10,11]")
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads(res.stdout.splitlines()[-1])["steps"] == 4
    res = vla("train", pick_place_store, "--out", run, "--preset", "debug")
    assert "pass --resume" in one_line_error(res)
    res = vla("eval", run, "--store", pick_place_store, "--out", tmp_path / "eval")
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads((tmp_path / "eval" / "summary.json").read_text())
    assert summary["episodes"] == 7 and (tmp_path / "eval" / "trajectories.png").exists()
    policies = [tiny_policy(tmp_path, pick_place_store, i) for i in range(3)]
    res = vla("rank", *policies, "--wm", run, "--starts", pick_place_store, "--real", "0.2,0.4,0.6", "--n-starts", 2,
              "--samples", 1, "--chunks", 2, "--out", tmp_path / "rank.json")
    assert res.returncode == 0, res.stderr[-2000:]
    ranked = json.loads((tmp_path / "rank.json").read_text())
    assert len(ranked["candidates"]) == 3 and "spearman" in ranked["metrics"]["imagined_success"]
    res = vla("imagine", policies[0], "--wm", run, "--starts", pick_place_store, "--record", tmp_path / "im.zarr",
              "--episodes", 2, "--chunks", 2, "--keyframe", 0.5)
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads(res.stdout.splitlines()[-1])["written"] == 2


def test_bad_input_is_one_line(pick_place_store: Path, trained_wm: Path, tmp_path: Path) -> None:
    line = one_line_error(vla("train", pick_place_store, "--out", tmp_path / "x", "model.ensembel=3"))
    assert "unknown key 'model.ensembel'" in line and "did you mean 'model.ensemble'" in line
    assert "not an EpisodeStore" in one_line_error(vla("train", tmp_path / "missing.zarr", "--out", tmp_path / "y"))
    assert "neither a world-model checkpoint" in one_line_error(vla("eval", tmp_path))
    # a policy for another observation (9-dim proprio, image mode) cannot act in this model
    from vla.data.store import EpisodeStore
    from vla.data.synthetic import default_schema, synthetic_episode

    schema = default_schema(cameras=(), state_dim=9, action_dim=7)
    other = tmp_path / "other.zarr"
    with EpisodeStore.create(other, schema) as store:
        store.append_episode(synthetic_episode(schema, seed=0, length=20))
    policy = tiny_policy(tmp_path, other, 0)
    line = one_line_error(vla("rank", policy, "--wm", trained_wm, "--starts", pick_place_store, "--n-starts", 1,
                              "--chunks", 1, "--samples", 1, "--out", tmp_path / "r.json"))
    assert "state_dim is 9, the world model's is 22" in line
    # start states from a store with other cameras
    cam_store = tmp_path / "cams.zarr"
    EpisodeStore.create(cam_store, default_schema(image_size=8, state_dim=22)).close()
    line = one_line_error(vla("imagine", policy, "--wm", trained_wm, "--starts", other,
                              "--record", tmp_path / "i.zarr"))
    assert "state size 9, the world model needs 22" in line


def test_chunk_truth_then_eval_with_truth(trained_wm: Path, tmp_path: Path) -> None:
    from tests.worldmodel.test_chunk_truth import state_policy

    policy = state_policy(tmp_path)
    assert "unknown key 'episodse'" in one_line_error(vla("chunk-truth", policy, "episodse=1"))
    res = vla("chunk-truth", policy, "episodes=1", "states_per_episode=2", "every=4", "horizon=10", "noisy=1",
              "perturbed=1", f"out={tmp_path / 'truth'}")
    assert res.returncode == 0, res.stderr[-2000:]
    res = vla("eval", trained_wm, "--truth", tmp_path / "truth", "--out", tmp_path / "ev")
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads((tmp_path / "ev" / "chunk_truth.json").read_text())[str(tmp_path / "truth")]
    assert report["states"] == 2 and report["seed_range"] == "tune" and "chunk_spearman" in report
    # one continuation per candidate: nothing to check the truth against itself with
    assert report["truth_reliability"]["continuations"] == 1
    assert np.isnan(report["truth_reliability"]["split_half_spearman"])
