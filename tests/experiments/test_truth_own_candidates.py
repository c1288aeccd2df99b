"""experiments/truth_own_candidates.py: a truth set with the perturbed copies left out, everything else kept."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from worldmodel.chunk_truth import FORMAT, VERSION, load_truth


def test_the_policys_own_candidates_keep_their_states_chunks_and_outcomes(tmp_path: Path) -> None:
    src = tmp_path / "truth"
    src.mkdir()
    kinds = ["noise_free", "noisy", "noisy", "perturbed"]
    rng = np.random.default_rng(0)
    arrays = {"seed": np.array([5, 5]), "step": np.array([0, 16]), "state": rng.normal(size=(2, 3)).astype(np.float32),
              "images": np.zeros((2, 0), np.uint8), "instruction": np.array(["a", "a"]),
              "chunks": rng.normal(size=(2, 4, 8, 7)).astype(np.float32),
              "success": rng.random((2, 4, 2)) < 0.5, "steps": rng.integers(1, 50, (2, 4, 2)).astype(np.int32),
              "replay_error": np.zeros(2)}
    np.savez_compressed(src / "truth.npz", **arrays)
    (src / "meta.json").write_text(json.dumps({"format": FORMAT, "version": VERSION, "candidates": 4,
                                               "candidate_kinds": kinds, "cameras": [],
                                               "config": {"noisy": 2, "perturbed": 1, "seed_range": "collect"}}))
    out = tmp_path / "own"
    res = subprocess.run([sys.executable, "experiments/truth_own_candidates.py", str(src), str(out)],
                         capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2])
    assert res.returncode == 0, res.stderr[-2000:]
    got, meta = load_truth(out)
    assert meta["candidate_kinds"] == kinds[:3] and meta["config"]["perturbed"] == 0 and meta["candidates"] == 3
    for k in ("chunks", "success", "steps"):
        np.testing.assert_array_equal(got[k], arrays[k][:, :3])
    np.testing.assert_array_equal(got["state"], arrays["state"])
