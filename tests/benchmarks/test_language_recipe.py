"""benchmarks/language_recipe.py: averaging the job's execution over training seeds, and the headline."""

from __future__ import annotations

import pytest

from tests.benchmarks.helpers import load_script

# the benchmark imports its siblings (bench_language, wm_candidates) as top-level modules
lr = load_script("language_recipe")


def row(true: float, heldout: float | None = None, **kw: float) -> dict:
    return {"true": true, "wrong": 0.0, "neutral": 0.0, "heldout": heldout,
            "paraphrase_gap": None if heldout is None else true - heldout, **kw}


def test_over_trainings_averages_each_figure_over_the_seeds_that_have_it() -> None:
    res = {"seed0_step15000_job": row(0.9, 0.8), "seed3_step15000_job": row(0.8),
           "seed3_step20000_job": row(0.1, 0.1),  # another step: not averaged in
           "seed0_step15000_plain": row(0.2, 0.2),  # another execution
           "seed0_step15000_minus_recipe_step20000_true": {"mean": 0.1}}
    f = lr.over_trainings(res, 15000)
    assert f is not None
    assert f["true"] == pytest.approx(0.85)
    assert f["heldout"] == pytest.approx(0.8)  # seed 3 has no held-out evaluation yet
    assert f["seeds_per_figure"]["true"] == [0, 3] and f["seeds_per_figure"]["heldout"] == [0]
    assert f["per_seed_true"] == {"0": 0.9, "3": 0.8}
    lo, hi = f["true_95_over_training_seeds"]
    assert lo < 0.85 < hi
    assert lr.over_trainings(res, 10000) is None


def test_one_training_has_no_interval_and_says_so() -> None:
    f = lr.over_trainings({"seed3_step15000_job": row(0.91, 0.89)}, 15000)
    assert f is not None and f["true_95_over_training_seeds"] is None
    line = lr.target_line(f)
    assert "**0.910** (one training, no interval; met)" in line and "paraphrase gap <= 0.05: +0.020 (met)" in line
    assert "with grounding: not measured" in line


def test_target_line_names_the_seeds_a_figure_misses() -> None:
    f = lr.over_trainings({"seed0_step20000_job": row(0.8, 0.7), "seed1_step20000_job": row(0.82)}, 20000)
    assert f is not None
    line = lr.target_line(f)
    assert "**0.810**" in line and "not met" in line
    assert "+0.100 (training seeds [0]) (not met)" in line


def test_set_headline_writes_the_issue_keys() -> None:
    table: dict = {}
    f = lr.over_trainings({"seed0_step20000_job": row(0.86, 0.84)}, 20000)
    assert f is not None
    lr.set_headline(table, f, "here")
    assert table["same_scene_true"] == 0.86 and table["same_scene_wrong"] == 0.0
    assert table["paraphrase_gap"] == pytest.approx(0.02) and table["same_scene_source"] == "here"
