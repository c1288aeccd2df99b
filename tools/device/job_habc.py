"""Device job (`JOB=job_habc.py MUJOCO_GL=disable bash tools/device/run.sh`): issue-15 refinement runs
(`benchmarks/bench_habc.py run`, state mode) side by side on the machine's CPUs, one process per
(method, seed), from inputs carried in `.dev/habc/`:

  .dev/habc/demos_<N>.zarr     the base's demos (the base name's d<N>)
  .dev/habc/base/              the base checkpoint (its optimizer state can stay behind)
  .dev/habc/v0_eval/summary.json   the base's evaluation on the benchmark's seeds (so no run repeats it)

JOB_TASK, JOB_BASE (e.g. d3_s3000), JOB_SETTING, JOB_METHODS, JOB_SEEDS name the runs; JOB_END is the
deadline (seconds after the start) by which they must finish; JOB_ARGS, more `bench_habc.py run`
arguments (a dry run here: `JOB_ARGS="--iterations 1 --episodes 2 --eval-episodes 2 --train-steps 5"`).
Each finished run comes back as `run_<setting>_<method>_seed<S>.tar`: its records, per-iteration
evaluations and train_info (what `bench_habc.py report` reads), not its store or checkpoints. Unpack
them into the benchmark's `runs/bench_habc_<task>/runs/` here. The runs' seeds fix their collection
and evaluation seeds as on this CPU, so they pair with the runs made here.
"""

import os
import shutil
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import OUT, log, main_logged, side_by_side  # this folder, not a package

WORK = Path("/tmp/job_habc")
END = float(os.environ.get("JOB_END", 280))
INPUTS = Path(".dev/habc").resolve()


def main() -> None:
    task, base = os.environ.get("JOB_TASK", "lift"), os.environ.get("JOB_BASE", "d3_s3000")
    setting = os.environ.get("JOB_SETTING", "interventions")
    methods = os.environ.get("JOB_METHODS", "habc_single").split(",")
    seeds = os.environ.get("JOB_SEEDS", "0,1,2,3,4").split(",")
    out = WORK / "out"
    WORK.mkdir(parents=True, exist_ok=True)
    (out / "v0_eval").mkdir(parents=True, exist_ok=True)
    shutil.copy(INPUTS / "v0_eval" / "summary.json", out / "v0_eval" / "summary.json")
    log(f"cpus {os.cpu_count()}: {task} {base} {setting} {methods} seeds {seeds}")
    jobs = {}
    for m in methods:
        for s in seeds:
            jobs[f"{m}_seed{s}"] = ([sys.executable, "benchmarks/bench_habc.py", "run", "--task", task, "--inputs",
                                     str(INPUTS), "--out", str(out), "--base", base, "--base-ckpt",
                                     str(INPUTS / "base"), "--seeds", s, "--settings", setting, "--methods", m,
                                    *os.environ.get("JOB_ARGS", "").split()],
                                    WORK / f"{m}_seed{s}.log")
    codes = side_by_side(jobs, END)
    log(f"exit codes: {codes}")
    for m in methods:
        for s in seeds:
            run = out / "runs" / setting / m / f"seed{s}"
            if not (run / "records.json").exists():
                continue
            with tarfile.open(OUT / f"run_{setting}_{m}_seed{s}.tar", "w") as tf:
                for f in run.rglob("*"):
                    rel = f.relative_to(out / "runs")
                    if f.is_file() and (f.name in ("records.json", "config.json", "train_info.json")
                                        or (f.name == "summary.json" and f.parent.name == "eval")):
                        tf.add(f, arcname=str(rel))
    logs = sorted((out / "logs").glob("*.log")) + sorted(WORK.glob("*.log"))
    if logs:
        with tarfile.open(OUT / "logs.tar", "w") as tf:
            for f in logs:
                tf.add(f, arcname=f.name)


if __name__ == "__main__":
    main_logged(main)
