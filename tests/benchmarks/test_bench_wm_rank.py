"""bench_wm_rank's report: the held-out model is scored on the checkpoints it never saw act, and counting the
successes of the model's own training rollouts stands beside it as the control."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.benchmarks.helpers import load_script


def test_the_heldout_model_is_scored_only_on_the_checkpoints_it_never_saw(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    br = load_script("bench_wm_rank")
    import results_io

    real = {"d40_s500": 0.1, "d40_s3000": 0.9, "d10_s500": 0.2, "d10_s1500": 0.5, "d10_s3000": 0.7}
    # the full model orders everything right; the held-out one reverses the unseen d10 checkpoints only
    full = dict(real)
    heldout = {"d40_s500": 0.1, "d40_s3000": 0.9, "d10_s500": 0.7, "d10_s1500": 0.5, "d10_s3000": 0.2}
    cands = {n: {"ckpt": n, "real_success": v, "tune_success": v, "rollout_success": 1 - v, "heldout": "",
                 "demos": int(n[1:3]), "steps": int(n.split("_s")[1])} for n, v in real.items()}
    (tmp_path / "candidates.json").write_text(json.dumps(cands))
    metrics = {"imagined_success": {k: {"value": 1.0, "lo": 1.0, "hi": 1.0}
                                    for k in ("spearman", "pearson", "mmrv", "pairwise_accuracy")}}
    for name, scores in (("rank.json", full), ("rank_seen.json", heldout)):
        (tmp_path / name).write_text(json.dumps({
            "candidates": {n: {"imagined_success": s, "soft_success": s} for n, s in scores.items()},
            "starts": 50, "samples": 4, "n_chunks": 25, "metrics": metrics}))
    results = tmp_path / "results"
    results.mkdir()
    write = results_io.write_result
    monkeypatch.setattr(results_io, "RESULTS", results)
    monkeypatch.setattr(results_io, "write_result",
                        lambda *a, **k: write(*a, **{**k, "results": results, "index": False}))
    monkeypatch.setattr(br, "SEEN_RUNS", ("d40",))
    br.report(tmp_path)
    out = json.loads((results / "worldmodel_rank.json").read_text())
    assert out["n_checkpoints"] == 5 and out["n_unseen_checkpoints"] == 3
    assert out["rank_unseen_spearman"] == pytest.approx(-1.0)  # the three d10 checkpoints, reversed
    assert out["proxies_on_unseen"]["model_imagined_success"]["spearman"] == pytest.approx(1.0)
    assert out["proxies"]["rollout_success_20"]["spearman"] == pytest.approx(-1.0)  # 1 - real: reversed
    assert out["_meta"]["seed_range"] == "report"
    page = (results / "worldmodel_rank.md").read_text()
    assert "d40_s500 (seen)" in page and "d10_s500 |" in page
