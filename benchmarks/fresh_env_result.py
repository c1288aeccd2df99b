"""fresh_env.sh's times and test outcome as benchmarks/results/fresh_env.json, written by code.

    python benchmarks/fresh_env_result.py /tmp/fresh     # fresh_env.sh calls it at its end

Reads ROOTFS/root/times.txt (`NAME rc=RC SECONDS s` per step) and, when `make test` ran, the last pytest
summary line of ROOTFS/root/make_test.log; each step's seconds and exit code become figures (`<step>_s`,
`<step>_rc`), with `make_run_total_s` (install + run: what a newcomer waits for).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from results_io import write_result

STEP = re.compile(r"^(\w+) rc=(-?\d+) (\d+) s$")
PYTEST = re.compile(r"=+ (.*\d+ (?:passed|failed).*) in [\d.:]+s? .*=+$")


def figures(root: Path) -> dict[str, Any]:
    """The figures of one fresh_env.sh run under `root` (ROOTFS/root)."""
    times = root / "times.txt"
    if not times.exists():
        raise SystemExit(f"{times}: no such file (run benchmarks/fresh_env.sh first)")
    out: dict[str, Any] = {}
    for line in times.read_text().splitlines():
        m = STEP.match(line.strip())
        if not m:
            raise SystemExit(f"{times}: unreadable line {line!r} (expected 'NAME rc=RC SECONDS s')")
        out[f"{m[1]}_s"], out[f"{m[1]}_rc"] = int(m[3]), int(m[2])
    if "make_install_s" in out and "make_run_s" in out:
        out["make_run_total_s"] = out["make_install_s"] + out["make_run_s"]
    log = root / "make_test.log"
    if "make_test_s" in out and log.exists():
        found = [m[1] for m in map(PYTEST.search, log.read_text(errors="replace").splitlines()) if m]
        out["make_test_result"] = found[-1] if found else "no pytest summary line"
    return out


def main() -> None:
    rootfs = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/fresh")
    figs = figures(rootfs / "root")
    # the commit fresh_env.sh archived into the root, which may be older than this tree's by the end of the run
    archived = rootfs / "root" / "commit.txt"
    write_result("fresh_env", figs, seed_range="none",
                 command=f"benchmarks/fresh_env.sh {rootfs}",
                 code_commit=archived.read_text().strip() if archived.exists() else None,
                 key_figures=[k for k in ("make_run_total_s", "make_install_s", "make_test_s") if k in figs])
    print(figs)


if __name__ == "__main__":
    main()
