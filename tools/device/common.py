"""What every device job shares: a log in $OUT that survives a late failure, and subprocesses with a
deadline whose output goes to a file in $OUT."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
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


def main_logged(main: Callable[[], None]) -> None:
    """Run a job's main; an exception goes to the log in $OUT (which comes back) instead of being lost."""
    try:
        main()
    except Exception as e:
        import traceback

        log("job failed: " + "".join(traceback.format_exception(e)))


def tail(p: Path, n: int = 15) -> str:
    return "\n".join(p.read_text(errors="replace").splitlines()[-n:]) if p.exists() else ""


def elapsed() -> float:
    """Seconds since the job started."""
    return time.time() - T0


def side_by_side(jobs: dict[str, tuple[list[str], Path]], deadline: float) -> dict[str, int]:
    """Commands at once: name -> (command, its log file); each waited for until `deadline` seconds
    after the job's start (then killed); name -> its return code (-9 when killed)."""
    procs = {}
    for name, (cmd, logfile) in jobs.items():
        with open(logfile, "w") as f:
            procs[name] = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
    codes: dict[str, int] = {}
    for name, p in procs.items():
        try:
            codes[name] = p.wait(timeout=max(5.0, deadline - elapsed()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            codes[name] = -9
    return codes


def run_side_by_side(jobs: dict[str, tuple[list[str], Path, Path]], deadline: float,
                     tail_lines: int = 8) -> dict[str, float | None]:
    """Evaluations at once (side_by_side): name -> (command, its out_dir, its log file); name -> the
    summary's success rate, None where none was written (its log's tail goes to the job log)."""
    side_by_side({name: (cmd, logfile) for name, (cmd, _, logfile) in jobs.items()}, deadline)
    results: dict[str, float | None] = {}
    for name, (_, dest, logfile) in jobs.items():
        s = dest / "summary.json"
        results[name] = json.loads(s.read_text())["success_rate"] if s.exists() else None
        log(f"eval {name}: {results[name]}" + ("" if s.exists() else "\n" + tail(logfile, tail_lines)))
    return results
