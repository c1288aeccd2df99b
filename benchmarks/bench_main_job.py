"""The main job as a newcomer runs it (`vla run`, the default preset), timed, and its figures.

    python benchmarks/bench_main_job.py [--out runs/main] [override ...]

Runs `vla run` in a subprocess (or only reads `--out`'s summary.json with --no-run), then writes the
main_job_* figures to benchmarks/results/main_job.json (results_io.write_result: with the command, date,
commit and the protocol range of the evaluation seeds) and the summary table to main_job.md; with --block NAME,
another run's figures under NAME in main_job_reruns.json (the headline files untouched).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

from harness import job_eval, job_runtime

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def success_of(cell: str) -> tuple[int, int]:
    """(successes, episodes) of a "7/20 [..]" cell."""
    m = re.match(r"(\d+)/(\d+)", cell)
    if m is None:
        raise ValueError(f"not a success cell: {cell!r}")
    return int(m.group(1)), int(m.group(2))


def command_args() -> str:
    """This run's arguments as typed, the --note paragraph left out (it is on the page itself)."""
    argv, out, skip = sys.argv[1:], [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--note":
            skip = True
        elif not a.startswith("--note="):
            out.append(a)
    return " ".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/main")
    ap.add_argument("--no-run", action="store_true", help="only read the summary of a finished run")
    ap.add_argument("--note", default="", help="a paragraph for the page (e.g. a stage re-run and why)")
    ap.add_argument("--wall-s", type=int, default=None, help="with --no-run: the wall time of that `vla run` as "
                    "measured around it (e.g. /usr/bin/time's elapsed), in seconds")
    ap.add_argument("--block", default="", help="with --no-run: write the figures under this key of "
                    "main_job_reruns.json (another run of the job beside the headline one, e.g. a re-run on a later "
                    "commit), leaving main_job.json and main_job.md as they are")
    ap.add_argument("overrides", nargs="*")
    args = ap.parse_args()
    if args.wall_s is not None and not args.no_run:
        ap.error("--wall-s is for --no-run (a run here is timed here)")
    if args.block and not args.no_run:
        ap.error("--block is for --no-run (a run here is the headline run)")
    out = (ROOT / args.out).resolve()
    seconds = args.wall_s
    if not args.no_run:
        t0 = time.time()
        subprocess.run([sys.executable, "-m", "vla.cli", "run", f"out_dir={out}", *args.overrides], check=True,
                       cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        seconds = round(time.time() - t0)
    summary = json.loads((out / "summary.json").read_text())
    # the runtime of the job's evaluations (eval.runtime; torch before it existed) and the other one's check
    runtime = job_runtime(out)
    other = "torch" if runtime == "onnx" else "onnx"
    pre_s, pre_n = success_of(summary["eval"][f"{runtime} success"])
    figures = {"main_job_pretrained_success": round(pre_s / pre_n, 3), "main_job_episodes": pre_n,
               "main_job_runtime": runtime}
    if f"{other} success" in summary["eval"]:
        check_s, check_n = success_of(summary["eval"][f"{other} success"])
        figures[f"main_job_{other}_success"] = round(check_s / check_n, 3)
    if "refine" in summary:
        ref_s, ref_n = success_of(summary["refine"]["success after"])
        figures |= {"main_job_refined_success": round(ref_s / ref_n, 3), "main_job_refine_method":
                    summary["refine"]["method"], "main_job_refine_gain": summary["refine"]["gain_mean"],
                    "main_job_refine_gain_95": [summary["refine"]["gain_lo"], summary["refine"]["gain_hi"]]}
    if "deploy" in summary:
        dep_s, dep_n = success_of(summary["deploy"]["success"])
        figures |= {"main_job_deploy_success": round(dep_s / dep_n, 3), "main_job_deploy_episodes": dep_n}
        for key in ("inputs", "reads simulator state"):
            if key in summary["deploy"]:
                figures[f"main_job_deploy_{key.replace(' ', '_')}"] = summary["deploy"][key]
    if "estimated_success" in summary.get("perception", {}):
        p = summary["perception"]
        figures |= {"main_job_estimated_pose_success": p["estimated_success"],
                    "main_job_ground_truth_pose_success": p["ground_truth_success"],
                    "main_job_estimated_over_ground_truth": p["ratio"],
                    "main_job_estimated_minus_ground_truth": p["estimated minus simulator's"],
                    "main_job_pose_error_mm": {k.split()[0]: p[k] for k in p if k.endswith("error mm (median, p90)")}}
    # the stages' own seconds, summed: with --no-run the only timing there is (vla run's start-up not in it)
    figures["main_job_stages_s"] = round(sum(float(f.get("seconds", 0)) for f in summary.values()))
    if seconds is not None:
        figures["main_job_s"] = seconds
    from results_io import write_result

    seed_range = json.loads((job_eval(out) / "summary.json").read_text()).get("seed_range", "collect")
    keys = [k for k in ("main_job_pretrained_success", "main_job_refined_success", "main_job_refine_gain_95",
                        "main_job_s", "main_job_stages_s") if k in figures][:4]
    if args.block:  # main_job.json's _meta stays the headline run's: another run goes to a file of its own
        block = {"run": args.out, "command": f"python benchmarks/bench_main_job.py {command_args()}",
                 "note": args.note, **figures}
        write_result("main_job_reruns", {args.block: block}, seed_range=seed_range)
        print(json.dumps(block, indent=1))
        return
    write_result("main_job", figures, seed_range=seed_range, key_figures=keys)
    rows = "\n".join(f"| {stage} | " + ", ".join(f"{k}: {v}" for k, v in fig.items()).replace("|", "/") + " |"
                     for stage, fig in summary.items())
    (RESULTS / "main_job.md").write_text(
        f"# The main job (`make run`)\n\nCommand: `python benchmarks/bench_main_job.py {command_args()}`"
        f"  \nMachine: {platform.machine()}, {os.cpu_count()} CPUs, no GPU. Written "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."
        + (f" Wall time of `vla run`: **{seconds} s**." if seconds is not None else "")
        + f"\n\nSeeds: every evaluation on the protocol's `{seed_range}` range (vla.protocol). What was chosen where: "
        "the preset's settings (demos, steps, the ensemble's rate and stride, EMA, the rollout budget) were chosen "
        "on the job's old evaluation seeds 1000-1199 (now inside `collect`) before the ranges existed; no setting "
        "was chosen on `report`."
        + (f"\n\n{args.note}" if args.note else "")
        + f"\n\n| stage | what it did and measured |\n|---|---|\n{rows}\n\n"
        f"Seeds: the evaluations' `{seed_range}` range (vla.protocol). Figures: `main_job.json` "
        f"({', '.join(sorted(figures))}). The report a person opens: "
        f"`{args.out}/report.html`.\n")
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
