import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.benchmarks.helpers import ROOT, load_script

rio = load_script("results_io")


def test_a_result_is_merged_by_code_and_stamped(tmp_path: Path) -> None:
    (tmp_path / "job.json").write_text(json.dumps({"other_script_s": 12}))
    rio.write_result("job", {"success": 0.835, "gain": {"mean": 0.07, "lo": 0.017, "hi": 0.123}},
                     seed_range="report", key_figures=["success", "gain"], command="python x.py --out a",
                     results=tmp_path)
    data = json.loads((tmp_path / "job.json").read_text())
    assert data["other_script_s"] == 12 and data["success"] == 0.835  # another script's key is kept
    meta = data["_meta"]
    assert meta["command"] == "python x.py --out a" and meta["seed_range"] == "report"
    assert len(meta["date"]) == 10 and meta["commit"]
    index = (tmp_path / "README.md").read_text()
    assert "| job | success 0.835; gain 0.07 [0.017, 0.123] | report | `python x.py --out a` |" in index


def test_bad_ranges_and_missing_key_figures_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="seed_range must be one of collect, tune, report or none"):
        rio.write_result("x", {"a": 1}, seed_range="heldout", results=tmp_path)
    with pytest.raises(KeyError, match="key figure 'b'"):
        rio.write_result("x", {"a": 1}, seed_range="none", key_figures=["b"], results=tmp_path)
    assert not (tmp_path / "x.json").exists()


def test_the_index_depends_on_the_files_alone(tmp_path: Path) -> None:
    (tmp_path / "old.json").write_text(json.dumps({"note": "text", "rate": 0.5, "ok": True}))
    (tmp_path / "old.md").write_text("# old\n")
    first = rio.index_text(tmp_path)
    assert "| [old](old.md) | rate 0.5 | not recorded | not recorded | not recorded | not recorded |" in first
    assert rio.index_text(tmp_path) == first
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match=r"bad\.json: not valid JSON"):
        rio.index_text(tmp_path)


def test_protocol_lists_each_headline_with_its_files_range(tmp_path: Path) -> None:
    rio.write_result("main_job", {"main_job_pretrained_success": 0.8}, seed_range="report", results=tmp_path)
    (tmp_path / "ensemble_report.json").write_text(json.dumps({"over_trainings": {"mean": 0.05}}))
    figures = {f["name"]: f for f in json.loads((tmp_path / "protocol.json").read_text())["figures"]}
    assert set(figures) == {name for name, _, _ in rio.HEADLINES}
    assert figures["main_job_pretrained_success"] | {} == {
        "name": "main_job_pretrained_success", "file": "main_job.json", "key": "main_job_pretrained_success",
        "value": 0.8, "range": "report", "held_out": True}
    rio.write_index(tmp_path)
    protocol = json.loads((tmp_path / "protocol.json").read_text())
    ensemble = next(f for f in protocol["figures"] if f["name"] == "ensemble_minus_plain")
    assert ensemble["value"] == {"mean": 0.05} and ensemble["range"] == "not recorded"
    assert protocol["held_out"] == 1 and "ensemble_minus_plain" in protocol["not_held_out"]
    rio.write_result("grounding", {"heldout_wrong": 0}, seed_range="none", held_out="sets no margin was read off",
                     results=tmp_path)
    protocol = json.loads((tmp_path / "protocol.json").read_text())
    grounding = next(f for f in protocol["figures"] if f["name"] == "grounding_heldout_wrong")
    assert grounding["held_out"] and grounding["held_out_because"] == "sets no margin was read off"


def test_the_repositorys_index_is_what_its_results_give() -> None:
    r = subprocess.run([sys.executable, "benchmarks/results_io.py", "--check"], cwd=ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
