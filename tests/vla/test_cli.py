"""The `vla` command as users run it: a real subprocess per call."""

import json
import subprocess
import sys
from pathlib import Path

import pytest


def vla(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vla.cli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


def test_help_lists_subcommands_and_each_has_help() -> None:
    out = vla("--help")
    assert out.returncode == 0
    for name in ("run", "config", "data"):
        assert name in out.stdout
    for sub in (["run"], ["config", "show"], ["data", "info"], ["data", "export-lerobot"]):
        res = vla(*sub, "--help")
        assert res.returncode == 0 and "Usage" in res.stdout, (sub, res.stderr)


def test_unknown_override_and_preset_are_clear_errors(tmp_path: Path) -> None:
    res = vla("run", "--preset", "debug", f"out_dir={tmp_path}", "demos.episods=3")
    assert res.returncode == 2
    assert "unknown key 'demos.episods'" in res.stderr and "did you mean 'demos.episodes'" in res.stderr
    res = vla("run", "--preset", "defualt")
    assert res.returncode == 2 and "did you mean 'default'" in res.stderr
    assert not (tmp_path / "summary.json").exists()


@pytest.mark.slow
def test_debug_job_runs_and_writes_summary(tmp_path: Path) -> None:
    out = tmp_path / "job"
    res = vla("run", "--preset", "debug", f"out_dir={out}", "stages=[demos,stats,lerobot,loader,pretrain,export]",
              "pretrain.train=debug", "pretrain.steps=2", "pretrain.batch_size=4", "lerobot.episodes=3")
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pretrain"]["steps"] == 2 and Path(summary["pretrain"]["checkpoint"]).is_dir()
    assert (Path(summary["export"]["onnx"]) / "runtime.json").exists()
    assert summary["demos"]["episodes"] == 4
    assert summary["lerobot"]["low-dim exact"] is True and summary["lerobot"]["episodes"] == "3 of 4"
    assert summary["loader"]["windows/s"] > 0
    assert (out / "lerobot" / "meta" / "info.json").exists()
    assert (out / "report.html").exists() and '<td class="stage">lerobot</td>' in (out / "report.html").read_text()
    info = vla("data", "info", str(out / "demos.zarr"))
    assert info.returncode == 0 and "4 episodes" in info.stdout


def test_a_finished_job_is_extended_by_a_stage_with_the_settings_it_ran_with(tmp_path: Path) -> None:
    out = tmp_path / "job"
    res = vla("run", "--preset", "debug", f"out_dir={out}", "stages=[demos,stats]", "demos.image_size=16")
    assert res.returncode == 0, res.stderr[-2000:]
    demos = json.loads((out / "summary.json").read_text())["demos"]
    # the loader stage added to it: demos keep their settings (image_size 16, not the override's 32)
    res = vla("run", "--preset", "debug", f"out_dir={out}", "overwrite=false", "stages=[loader]",
              "demos.image_size=32")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "settings of the stages already run" in res.stdout and "demos" in res.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary) == ["demos", "stats", "loader"] and summary["demos"] == demos
    assert json.loads((out / "job.json").read_text())["demos"]["image_size"] == 16
    page = (out / "report.html").read_text()
    assert all(f'<td class="stage">{s}</td>' in page for s in ("demos", "stats", "loader"))
    # a damaged record is one line naming the file, and the folder is left as it was
    (out / "summary.json").write_text("{not json")
    res = vla("run", "--preset", "debug", f"out_dir={out}", "overwrite=false", "stages=[loader]")
    assert res.returncode == 2 and "summary.json: not a job's record" in res.stderr
    assert "Traceback" not in res.stderr and (out / "demos.zarr").exists()
