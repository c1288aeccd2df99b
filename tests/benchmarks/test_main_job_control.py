"""benchmarks/main_job_control.py pairs each job's refined policy with its pretrained one and with its
demos-only control seed by seed, and over the jobs takes one difference per training."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.benchmarks.helpers import load_script


def write_eval(folder: Path, outcomes: list[bool]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    detail = [{"seed": 1000 + i, "success": s} for i, s in enumerate(outcomes)]
    (folder / "summary.json").write_text(json.dumps({"episodes_detail": detail}))


def make_job(root: Path, base: list[bool], refined: list[bool], control: list[bool]) -> Path:
    (root / "refine").mkdir(parents=True)
    (root / "refine" / "config.json").write_text(json.dumps({"iterations": 1}))
    write_eval(root / "refine" / "iter_00" / "eval", base)
    write_eval(root / "refine" / "iter_01" / "eval", refined)
    write_eval(root / "refine_control" / "iter_01" / "eval", control)
    return root


def test_differences_are_paired_by_seed_and_one_per_training(tmp_path: Path) -> None:
    bench = load_script("main_job_control")
    rng = np.random.default_rng(0)
    jobs = []
    for j, lift in enumerate((0.2, 0.1, 0.15)):
        base = rng.random(40) < 0.5
        jobs.append(make_job(tmp_path / f"job{j}", base.tolist(), (base | (rng.random(40) < lift)).tolist(),
                             base.tolist()))
    rows = [bench.compare(j) for j in jobs]
    assert {r["seed_range"] for r in rows} == {"collect"}  # seeds 1000..: the protocol says they are not held out
    r0 = rows[0]["rounds"]["1"]
    # the control equals the pretrained policy seed for seed: its difference is exactly 0, and the refined
    # policy's gain over it is its gain over the pretrained one
    assert r0["control_minus_pretrained"]["mean"] == 0 and r0["control_minus_pretrained"]["better"] == 0
    assert r0["refined_minus_control"] == r0["refined_minus_pretrained"]
    over = bench.pooled(rows, "1")
    per_job = [r["rounds"]["1"]["refined_minus_control"]["mean"] for r in rows]
    assert over["trainings"] == 3 and over["refined_minus_control_per_job"] == per_job
    assert over["refined_minus_control"]["mean"] == pytest.approx(np.mean(per_job))
    assert over["refined_minus_control"]["lo"] < np.mean(per_job) < over["refined_minus_control"]["hi"]
    assert over["refined_minus_control_pooled"]["pairs"] == 120


def test_a_job_without_a_refine_stage_is_named(tmp_path: Path, monkeypatch) -> None:
    bench = load_script("main_job_control")
    monkeypatch.setattr("sys.argv", ["main_job_control.py", "--jobs", str(tmp_path / "nojob"), "--no-run"])
    with pytest.raises(SystemExit, match=r"nojob: no refine/config\.json"):
        bench.main()
