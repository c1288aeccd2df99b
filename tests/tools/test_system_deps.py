"""tools/system-deps (run by `make install`): which system packages it wants, when it installs them
with apt-get, and the one line it prints when it cannot. The machine is simulated through the
SYSTEM_DEPS_* variables; nothing is installed or removed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "system-deps"
WITH_OSMESA = "libOSMesa.so.8 (libc6,x86-64) => /lib/x86_64-linux-gnu/libOSMesa.so.8"
WITH_EGL = "libEGL.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libEGL.so.1"
# what OpenCV's wheel loads (libgl1, libglib2.0-0, libxcb1)
WITH_CV = [f"{lib} (libc6,x86-64) => /lib/x86_64-linux-gnu/{lib}"
           for lib in ("libGL.so.1", "libglib-2.0.so.0", "libxcb.so.1")]
CPU_PACKAGES = "libosmesa6 libgl1 libglib2.0-0 libxcb1"


def run(tmp_path: Path, libs: list[str], *args: str, gpu: bool = False, root: bool = True, sudo: bool = False,
        apt: str | None = None, commands: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    listing = tmp_path / "ldconfig.txt"
    if not listing.exists():
        listing.write_text("".join(line + "\n" for line in libs))
    env = dict(os.environ, SYSTEM_DEPS_LDCONFIG=f"cat {listing}", SYSTEM_DEPS_GPU=str(int(gpu)),
               SYSTEM_DEPS_ROOT=str(int(root)), SYSTEM_DEPS_SUDO=str(int(sudo)),
               SYSTEM_DEPS_COMMANDS="\n".join(commands))
    env["SYSTEM_DEPS_APT"] = apt if apt is not None else str(fake_apt(tmp_path, listing, installs=False))
    return subprocess.run([str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60)


def fake_apt(tmp_path: Path, listing: Path, installs: bool) -> Path:
    """An apt-get that logs its arguments and (if `installs`) makes the libraries appear."""
    script = tmp_path / "apt-get"
    add = "; ".join(f"echo '{line}' >> {listing}" for line in [WITH_OSMESA, WITH_EGL, *WITH_CV]) if installs else ":"
    script.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "apt.log"}\n'
                      f'if [ "$1" = install ]; then {add}; fi\n')
    script.chmod(0o755)
    return script


def apt_calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "apt.log"
    return log.read_text().splitlines() if log.exists() else []


def test_nothing_missing_is_silent(tmp_path):
    r = run(tmp_path, [WITH_OSMESA, *WITH_CV], root=False)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert apt_calls(tmp_path) == []


def test_not_root_without_sudo_stops_with_one_line(tmp_path):
    r = run(tmp_path, ["libc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6"], root=False, sudo=False)
    assert r.returncode == 1
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert "libosmesa6" in lines[0] and f"sudo apt-get install -y {CPU_PACKAGES}" in lines[0]
    assert "libegl1" not in lines[0]  # no GPU: EGL is not needed
    assert apt_calls(tmp_path) == []


def test_gpu_machine_also_needs_egl(tmp_path):
    r = run(tmp_path, [WITH_OSMESA, *WITH_CV], gpu=True, root=False)
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and "sudo apt-get install -y libegl1" in r.stderr
    assert run(tmp_path, [], gpu=True, root=False, sudo=False).stderr.count("libegl1") >= 1
    ok = tmp_path / "ok"
    ok.mkdir()
    assert run(ok, [WITH_OSMESA, WITH_EGL, *WITH_CV], gpu=True, root=False).returncode == 0


@pytest.mark.parametrize("root,sudo", [(True, False), (False, True)])
def test_installs_with_apt_get_when_it_can(tmp_path, root, sudo):
    listing = tmp_path / "ldconfig.txt"
    listing.write_text("")
    apt = fake_apt(tmp_path, listing, installs=True)
    if sudo:  # `sudo -n CMD...` -> CMD...: a sudo that only runs its command
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        (bin_dir / "sudo").write_text('#!/bin/sh\n[ "$1" = -n ] && shift\nexec "$@"\n')
        (bin_dir / "sudo").chmod(0o755)
        os.environ["PATH"], old = f"{bin_dir}:{os.environ['PATH']}", os.environ["PATH"]
    try:
        r = run(tmp_path, [], gpu=True, root=root, sudo=sudo, apt=str(apt))
    finally:
        if sudo:
            os.environ["PATH"] = old
    assert r.returncode == 0, r.stderr
    calls = apt_calls(tmp_path)
    assert calls[0].startswith("update")
    assert calls[1].startswith("install -y") and calls[1].endswith(f"{CPU_PACKAGES} libegl1")


def test_apt_get_that_does_not_help_fails(tmp_path):
    r = run(tmp_path, [], root=True)  # the default fake apt-get installs nothing
    assert r.returncode == 1
    assert f"still missing after apt-get install: {CPU_PACKAGES}" in r.stderr


def test_check_only_never_installs(tmp_path):
    r = run(tmp_path, [], "--check", root=True)
    assert r.returncode == 1 and "libosmesa6" in r.stderr
    assert apt_calls(tmp_path) == []


def test_without_apt_get_names_the_debian_package(tmp_path):
    r = run(tmp_path, [], root=True, apt="")
    assert r.returncode == 1
    assert len(r.stderr.splitlines()) == 1 and "libosmesa6" in r.stderr


def test_failing_apt_get_says_what_to_run(tmp_path):
    apt = tmp_path / "broken-apt"
    apt.write_text("#!/bin/sh\necho 'E: Unable to locate package' >&2\nexit 100\n")
    apt.chmod(0o755)
    r = run(tmp_path, [], root=True, apt=str(apt))
    assert r.returncode == 1
    assert "Unable to locate package" in r.stderr
    assert r.stderr.splitlines()[-1].endswith(f"sudo apt-get install -y {CPU_PACKAGES}")


def test_the_test_suite_also_wants_chromium(tmp_path):
    libs = [WITH_OSMESA, *WITH_CV]
    assert run(tmp_path, libs, root=False).returncode == 0  # make install: no browser needed
    r = run(tmp_path, libs, "--test", root=False)
    assert r.returncode == 1 and r.stderr.count("\n") == 1
    assert r.stderr.rstrip().endswith("sudo apt-get install -y chromium (then make again)")
    assert run(tmp_path, libs, "--test", root=False, commands=("chromium",)).returncode == 0
    bare = tmp_path / "bare"
    bare.mkdir()
    r = run(bare, [], "--check", "--test", root=True)
    assert r.returncode == 1 and f"{CPU_PACKAGES} chromium" in r.stderr and apt_calls(bare) == []


def test_unknown_option_is_a_usage_error(tmp_path):
    r = run(tmp_path, [], "--tests")
    assert r.returncode == 2 and "usage:" in r.stderr
