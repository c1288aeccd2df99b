"""The learning check (tests/test_learning_check.py) run N times: does it ever flake, and how long does it take?

    python -m tests.learning_check_repeat --runs 10

Each run is the test itself in a fresh `pytest` process (as CI runs it), timed; its figures (pretrained,
refined and control success on 20 tune seeds, intervention steps) are read from the line the test prints.
Written by results_io.write_result to benchmarks/results/learning_check.json: every run's figures and
seconds, whether they were all identical, and the smallest margins to the test's floors. Resumable: the
runs already in `--log` are kept (each is one JSON line).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.results_io import write_result
from tests import test_learning_check as check

ROOT = Path(__file__).resolve().parents[1]


def run_once() -> dict:
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "osmesa"),
           "PYOPENGL_PLATFORM": os.environ.get("PYOPENGL_PLATFORM", "osmesa")}
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                        "tests/test_learning_check.py"], cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = round(time.perf_counter() - t0, 1)
    m = re.search(r"learning check: (\{.*\})", r.stdout)
    return {"passed": r.returncode == 0, "seconds": seconds, **(json.loads(m.group(1)) if m else {}),
            **({} if r.returncode == 0 else {"tail": r.stdout[-2000:]})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--log", type=Path, default=Path("runs/learning_check/runs.jsonl"))
    args = ap.parse_args()
    args.log.parent.mkdir(parents=True, exist_ok=True)
    runs = [json.loads(line) for line in args.log.read_text().splitlines()] if args.log.exists() else []
    while len(runs) < args.runs:
        r = run_once()
        runs.append(r)
        with args.log.open("a") as f:
            f.write(json.dumps(r) + "\n")
        print(f"run {len(runs)}: {json.dumps(r)}", flush=True)
    keys = ("pretrained", "refined", "control", "intervention_steps")
    outcomes = {tuple(r.get(k) for k in keys) for r in runs}
    done = [r for r in runs if "pretrained" in r]
    seconds = sorted(r["seconds"] for r in runs)
    figures = {"runs": len(runs), "passed": sum(r["passed"] for r in runs), "identical": len(outcomes) == 1,
               "seconds_median": seconds[len(seconds) // 2], "seconds_max": seconds[-1],
               "pretrained_floor": check.PRETRAINED_FLOOR, "refine_margin": check.REFINE_MARGIN,
               "min_pretrained_above_floor": round(min(r["pretrained"] for r in done) - check.PRETRAINED_FLOOR, 3)
               if done else None,
               "min_refined_minus_control": round(min(r["refined"] - r["control"] for r in done), 3) if done else None,
               "per_run": runs}
    write_result("learning_check", figures, seed_range="tune",
                 key_figures=["passed", "runs", "identical", "seconds_median"])
    print(json.dumps({k: v for k, v in figures.items() if k != "per_run"}, indent=1))


if __name__ == "__main__":
    main()
