"""sim/__init__.py: OSMesa by default; without libOSMesa, importing mujoco names the package to install."""

from __future__ import annotations

import os
import subprocess
import sys

# Each case runs in a fresh interpreter: mujoco picks its GL backend once, at its first import.
PROBE = """
import ctypes.util, sys
real = ctypes.util.find_library
ctypes.util.find_library = lambda name: None if name == "OSMesa" else real(name)
import sim
try:
    import mujoco
except sim.OSMesaNotFoundError as e:
    print("ERROR", e)
    sys.exit(3)
print("IMPORTED", mujoco.__name__)
"""


def _probe(gl: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM")}
    if gl is not None:
        env["MUJOCO_GL"] = gl
    return subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)


def test_missing_osmesa_names_the_package_and_the_command():
    r = _probe(None)  # sim selects osmesa itself
    assert r.returncode == 3, r.stdout + r.stderr
    line = r.stdout.strip()
    assert "\n" not in line
    assert "libosmesa6" in line and "sudo apt-get install -y libosmesa6" in line


def test_other_backends_are_not_checked():
    r = _probe("disable")  # no rendering at all: libOSMesa is not needed
    assert r.returncode == 0, r.stdout + r.stderr
    assert "IMPORTED mujoco" in r.stdout


def test_the_error_is_a_file_not_found_error():
    """`vla` prints FileNotFoundError as one `error: ...` line (vla.cli.main)."""
    import sim

    assert issubclass(sim.OSMesaNotFoundError, FileNotFoundError)
    assert "libosmesa6" in str(sim.OSMesaNotFoundError(sim.OSMESA_MESSAGE))
