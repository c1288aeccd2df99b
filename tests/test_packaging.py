"""The wheel as a user gets it (`pip install vla-stack`, not editable): it is built from a copy of the
sources, installed into a fresh venv, and the `vla` command runs from another folder with the
presets and MJCF assets it ships (nothing read from the repository).

To stay fast and offline, the fresh venv borrows the dependencies of the project's venv: a .pth
adds the project's site-packages after its own (and runs that folder's .pth hooks, except the
editable install of this project), so only the wheel's own files come from the fresh venv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
PRESET_KINDS = ("deploy", "eval", "job", "perception", "perturb", "policy", "refine", "session", "train",
                "worldmodel")

DEPS_HOOK = """\
import site
import sys
from pathlib import Path

_dir = Path({site_packages!r})
sys.path.append(str(_dir))
for _pth in sorted(_dir.glob("*.pth")):
    if not _pth.name.startswith("__editable__"):
        site.addpackage(str(_dir), _pth.name, None)
"""


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    res = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, f"{cmd} failed ({res.returncode}):\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res.stdout


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("wheel")
    # Build from a copy of what the sdist would hold, so no build/ or egg-info lands in the checkout.
    src = tmp / "src"
    src.mkdir()
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = [p.rstrip("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]]
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for pkg in packages:
        shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index", ".",
          "-w", str(tmp / "dist")], cwd=src)
    (wheel,) = (tmp / "dist").glob("vla_stack-*.whl")

    venv = tmp / "venv"
    _run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(venv)], cwd=tmp)
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
          str(wheel)], cwd=tmp)
    site_packages = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              cwd=tmp).strip())
    (site_packages / "_project_deps.py").write_text(DEPS_HOOK.format(site_packages=sysconfig.get_paths()["purelib"]))
    (site_packages / "zz_project_deps.pth").write_text("import _project_deps\n")

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    return venv, env


@pytest.mark.slow
def test_wheel_ships_presets_and_assets(wheel_venv, tmp_path):
    venv, env = wheel_venv
    probe = """
import json, sys
import vla, vla.robot.arm, real.stages
from vla.config import CONFIG_DIR
from pathlib import Path
print(json.dumps({"vla": vla.__file__, "config_dir": str(CONFIG_DIR),
                  "asset": str(vla.robot.arm.ASSET.parent), "bridge": str(real.stages.BRIDGE_CONFIG),
                  "pythonpath": real.stages.ros_env(1).get("PYTHONPATH"), "path": sys.path}))
"""
    info = json.loads(_run([str(venv / "bin" / "python"), "-c", probe], cwd=tmp_path, env=env))
    for key in ("vla", "config_dir", "asset", "bridge"):
        assert Path(info[key]).is_relative_to(venv), (key, info[key])
        assert not Path(info[key]).resolve().is_relative_to(ROOT), (key, info[key])
    assert str(ROOT) not in info["path"]
    assert Path(info["bridge"]).is_file() and (Path(info["asset"]) / "native_arm.xml").is_file()
    assert info["pythonpath"] == env.get("PYTHONPATH")  # installed: the ROS child processes need no path

    out = _run([str(venv / "bin" / "vla"), "config", "list"], cwd=tmp_path, env=env)
    listed = dict(line.split(": ", 1) for line in out.strip().splitlines())
    assert sorted(listed) == sorted(PRESET_KINDS)
    assert "bridge" in listed["deploy"] and "debug" in listed["job"] and "tiny" in listed["policy"]


@pytest.mark.slow
def test_wheel_runs_the_job_from_another_folder(wheel_venv, tmp_path):
    """The debug preset with a simulator stage: presets, the MJCF asset and the worker processes
    all come from the installed wheel."""
    venv, env = wheel_venv
    t0 = time.monotonic()
    _run([str(venv / "bin" / "vla"), "run", "--preset", "debug", "out_dir=run", "stages=[sim_demos,stats,loader]",
          "demos.task=pick_place", "demos.episodes=1", "demos.workers=1", "demos.image_size=32"],
         cwd=tmp_path, env=env, timeout=240)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["sim_demos"]["episodes"] == 1 and summary["sim_demos"]["steps"] > 0
    assert summary["stats"]["keys"] > 0 and "loader" in summary
    assert time.monotonic() - t0 < 120
