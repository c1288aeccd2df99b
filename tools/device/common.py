"""What every device job shares: a log in $OUT that survives a late failure, and subprocesses with a
deadline whose output goes to a file in $OUT."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

T0 = time.time()
OUT = Path(os.environ.get("OUT", "/tmp/out"))
OUT.mkdir(parents=True, exist_ok=True)


def log(msg: str) -> None:
    line = f"[{time.time() - T0:6.1f}s] {msg}"
    print(line, flush=True)
    with open(OUT / "job.log", "a") as f:
        f.write(line + "\n")


def vla(*args: object) -> list[str]:
    return [sys.executable, "-m", "vla.cli", *map(str, args)]


def run(cmd: list[str], logfile: Path, timeout: float) -> int:
    """`cmd` with its output in `logfile`; -9 when it ran past `timeout` seconds (and was killed)."""
    t = time.time()
    with open(logfile, "w") as f:
        try:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=max(5.0, timeout)).returncode
        except subprocess.TimeoutExpired:
            rc = -9
    log(f"{logfile.name}: rc={rc} in {time.time() - t:.0f} s")
    return rc


def tail(p: Path, n: int = 15) -> str:
    return "\n".join(p.read_text(errors="replace").splitlines()[-n:]) if p.exists() else ""


def left() -> float:
    """Seconds since the job started."""
    return time.time() - T0
