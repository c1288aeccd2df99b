"""tools/torch-source: where `make install` takes torch from on a CPU machine (a local CPU wheel in pip's
wheel folders, else PyTorch's CPU index; TORCH_INDEX_URL always wins), and the Makefile's use of it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "torch-source"


def source(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "TORCH_INDEX_URL"}
    clean["PIP_CONFIG_FILE"] = os.devnull  # this machine's pip configuration names its own wheel folder
    return subprocess.run([str(SCRIPT), sys.executable, "2.13.0"], capture_output=True, text=True, check=True,
                          env={**clean, **env})


def test_a_local_cpu_wheel_is_used_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").touch()
    r = source(tmp_path, PIP_FIND_LINKS=f"/nonexistent {tmp_path}")
    assert r.stdout.strip() == ""
    assert f"the CPU wheel in {tmp_path}" in r.stderr


def test_without_one_pytorchs_cpu_index_and_never_pypis_cuda_build(tmp_path: Path) -> None:
    (tmp_path / "torch-2.12.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").touch()  # another version
    r = source(tmp_path, PIP_FIND_LINKS=str(tmp_path))
    assert r.stdout.split() == ["--index-url", "https://download.pytorch.org/whl/cpu",
                                "--extra-index-url", "https://pypi.org/simple"]
    assert "about 200 MB" in r.stderr and "TORCH_INDEX_URL" in r.stderr


def test_torch_index_url_wins(tmp_path: Path) -> None:
    (tmp_path / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").touch()
    r = source(tmp_path, PIP_FIND_LINKS=str(tmp_path), TORCH_INDEX_URL="https://mirror.example/cpu")
    assert r.stdout.split()[:2] == ["--index-url", "https://mirror.example/cpu"]


def test_the_makefile_pins_one_version_and_asks_the_script() -> None:
    make = (ROOT / "Makefile").read_text()
    pinned = (ROOT / "constraints" / "cpu.txt").read_text().split("torch==")[1].split()[0]
    assert f"TORCH_VERSION := {pinned}" in make
    assert "$$(tools/torch-source $(PY) $(TORCH_VERSION))" in make
    dry = subprocess.run(["make", "-n", "-B", "-C", str(ROOT), ".venv/.installed", "HAS_GPU="], capture_output=True,
                         text=True, check=True).stdout
    assert f"torch=={pinned} $(tools/torch-source .venv/bin/python {pinned})" in dry
    assert "--no-deps onnxruntime-gpu" not in dry and "gpu]" not in dry  # a CPU machine gets no CUDA build
    gpu = subprocess.run(["make", "-n", "-B", "-C", str(ROOT), ".venv/.installed", "HAS_GPU=1"], capture_output=True,
                         text=True, check=True).stdout
    assert ".[dev,sim,ros,dist,gpu]" in gpu and "install -q --force-reinstall --no-deps onnxruntime-gpu" in gpu
